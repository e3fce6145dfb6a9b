import hashlib, struct, sys
# Independent reference of fingerprint.h's encoding: python's hashlib over the zkey's
# section 2 header and section 4 entries, sorted and summed here.
b = open(sys.argv[1], 'rb').read()
n = struct.unpack_from('<I', b, 8)[0]; off = 12; sec = {}
for _ in range(n):
    sid, size = struct.unpack_from('<IQ', b, off); off += 12
    sec[sid] = (off, size); off += size
o, _ = sec[2]
n8q = struct.unpack_from('<I', b, o)[0]; o += 4 + n8q
n8r = struct.unpack_from('<I', b, o)[0]; o += 4
rb = b[o:o + n8r]; r = int.from_bytes(rb, 'little'); o += n8r
nvars, npub, dom = struct.unpack_from('<III', b, o)
o, _ = sec[4]
cnt = struct.unpack_from('<I', b, o)[0]; o += 4
acc = {}
for i in range(cnt):
    m, c, s = struct.unpack_from('<III', b, o + i * (12 + n8r))
    v = int.from_bytes(b[o + i * (12 + n8r) + 12: o + (i + 1) * (12 + n8r)], 'little')
    acc[(c, m, s)] = (acc.get((c, m, s), 0) + v) % r
h = hashlib.sha256(b'cuzk-circuit-fp-v1' + struct.pack('<I', n8r) + rb + struct.pack('<III', nvars, npub, dom))
k = 0
for key in sorted(acc):
    if acc[key]:
        h.update(struct.pack('<III', *key) + acc[key].to_bytes(n8r, 'little')); k += 1
h.update(struct.pack('<Q', k))
print(h.hexdigest())
