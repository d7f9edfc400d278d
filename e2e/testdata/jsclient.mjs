// One device of the JavaScript SDK (clients/js) for an e2e test: it connects to IMD_JS_URL
// with IMD_JS_TOKEN as device IMD_JS_DEVICE and prints, one line each, what the test checks:
// "message <topic> <seq>", "kick <reason>", "state <state>". It ends when its stdin closes.
// Its WebSocket is the ws package's (package.json beside it, installed by deploy/local/node.sh
// deps), so it runs the same on Node 18, which has no global WebSocket, as on later ones.
import { WebSocket } from "ws";
import { Client } from "../../clients/js/imd.js";

const out = (line) => process.stdout.write(line + "\n");
const c = new Client({
  url: process.env.IMD_JS_URL,
  token: process.env.IMD_JS_TOKEN,
  deviceId: Number(process.env.IMD_JS_DEVICE),
  heartbeatMs: 5_000,
  WebSocket,
});
c.on("message", (m) => out(`message ${m.topic} ${m.seq}`));
c.on("kick", (k) => out(`kick ${k.reason}`));
c.on("state", (s) => out(`state ${s}`));
c.on("error", (err) => out(`error ${String(err?.message ?? err).replace(/\s+/g, " ")}`));
process.stdin.on("end", () => { c.close(); process.exit(0); });
process.stdin.resume();
await c.connect();
