// Verify many Groth16 proofs with snarkjs in one node process (a `snarkjs groth16
// verify` per proof costs a node start and a curve build each: seconds apiece).
// usage: node snarkjs_verify_all.cjs SNARKJS_DIR VKEY.json DIR [DIR...]
//   every DIR/<name>.proof.json with its DIR/<name>.public.json is checked against
//   VKEY.json; prints "N verified", exits 1 naming each proof snarkjs rejects.
const fs = require("fs");
const path = require("path");
const [snarkjsDir, vkPath, ...dirs] = process.argv.slice(2);
const snarkjs = require(path.resolve(snarkjsDir));
(async () => {
  const vk = JSON.parse(fs.readFileSync(vkPath, "utf8"));
  let ok = 0, bad = 0;
  for (const d of dirs) {
    for (const f of fs.readdirSync(d).filter((f) => f.endsWith(".proof.json")).sort()) {
      const base = f.slice(0, -".proof.json".length);
      const proof = JSON.parse(fs.readFileSync(path.join(d, f), "utf8"));
      const pub = JSON.parse(fs.readFileSync(path.join(d, base + ".public.json"), "utf8"));
      const logger = { info() {}, error() {}, warn() {}, debug() {} };
      if (await snarkjs.groth16.verify(vk, pub, proof, logger)) ok++;
      else { bad++; console.log("REJECTED " + path.join(d, f)); }
    }
  }
  console.log(ok + " verified" + (bad ? ", " + bad + " rejected" : ""));
  await globalThis.curve_bn128?.terminate?.();
  process.exit(bad ? 1 : 0);
})().catch((e) => { console.log("error: " + e.stack); process.exit(2); });
