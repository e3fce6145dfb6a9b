# tests/lib/sse_cut_proxy.py PORT UPSTREAM-PORT LOG: a TCP proxy on 127.0.0.1:PORT to the
# API on 127.0.0.1:UPSTREAM-PORT that drops the first Server-Sent Events stream
# (GET .../events) right after its first event, as a proxy or a network that fails
# would; every other connection is passed through whole. A line of JSON per request in
# LOG: its path, its Last-Event-ID (or null) and whether it was cut. So a client's
# reconnection is seen, with the id it resumed from (tests/scripts/sdk_python.sh, sdk_js.sh).
import json, socket, sys, threading
port, upstream, log = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
lock = threading.Lock()
cut_done = False


def pipe(src, dst):
    try:
        while (b := src.recv(65536)):
            dst.sendall(b)
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def serve(client):
    global cut_done
    up = socket.create_connection(("127.0.0.1", upstream))
    head = b""
    while b"\r\n\r\n" not in head:
        b = client.recv(65536)
        if not b:
            client.close(), up.close()
            return
        head += b
    lines = head.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    path = lines[0].split(" ")[1]
    last = next((l.split(":", 1)[1].strip() for l in lines[1:] if l.lower().startswith("last-event-id:")), None)
    with lock:
        cut = path.split("?")[0].endswith("/events") and not cut_done
        cut_done = cut_done or cut
        with open(log, "a") as f:
            f.write(json.dumps({"path": path, "last_event_id": last, "cut": cut}) + "\n")
    up.sendall(head)
    if not cut:
        threading.Thread(target=pipe, args=(client, up), daemon=True).start()
        pipe(up, client)
        return
    # The answer's head, then its body up to the end of the first event (its blank line).
    got = b""
    while True:
        b = up.recv(65536)
        if not b:
            break
        got += b
        body_at = got.find(b"\r\n\r\n")
        end = got.find(b"\n\n", body_at + 4) if body_at >= 0 else -1
        if end >= 0:
            got = got[:end + 2]
            break
    client.sendall(got)
    for s in (client, up):
        s.shutdown(socket.SHUT_RDWR)
        s.close()


srv = socket.create_server(("127.0.0.1", port))
while True:
    conn, _ = srv.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
