// bench/api.sh's JS SDK row: N proofs from T concurrent promises through cuzk-client.
//   node sdk_clients.mjs BASE TOKEN CIRCUIT INPUT.json N T OUTDIR
// T async workers share one CuzkClient and take the N proofs between them; each proof is
// one prove() (a POST with ?wait=60: the proof in the answer). Writes OUTDIR/sI.proof.json
// and .public.json for snarkjs and prints one JSON line {"wall", "cpu" (this process's
// user + system seconds over the run), "errors"}. The SDK is
// the tree's (clients/js/index.js).
import fs from "node:fs";
import path from "node:path";
import { CuzkClient } from "../clients/js/index.js";

const [base, token, circuit, inputPath, n, t, outdir] = process.argv.slice(2);
const inputs = JSON.parse(fs.readFileSync(inputPath, "utf8"));
const client = new CuzkClient({ baseUrl: base, token, timeoutMs: 600_000 });
const errors = [];
let next = 0;
async function worker() {
  for (let i = next++; i < Number(n); i = next++) {
    try {
      const [p] = await client.prove(circuit, inputs, { wait: 60 });
      fs.writeFileSync(path.join(outdir, `s${i}.proof.json`), JSON.stringify(p.proof));
      fs.writeFileSync(path.join(outdir, `s${i}.public.json`), JSON.stringify(p.publicSignals));
    } catch (e) {
      errors.push(`proof ${i}: ${e.message}`);
    }
  }
}
const t0 = performance.now();
const c0 = process.cpuUsage();
await Promise.all(Array.from({ length: Number(t) }, worker));
const c = process.cpuUsage(c0);
console.log(JSON.stringify({ wall: Math.round(performance.now() - t0) / 1000, cpu: Math.round((c.user + c.system) / 1000) / 1000, errors }));
