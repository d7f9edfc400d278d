// Unit tests of the SDK under Node (node --test), against a scripted fake server.
import { test } from "node:test";
import assert from "node:assert/strict";
import { deflateSync } from "node:zlib";

import { Client, Cmd, Code, ImdError, MemoryStore, PresenceRefresher, backoffDelay, decodeFrame, encodeFrame, envelopeOf } from "../imd.js";

// FakeSocket is a WebSocket whose server side is the test: it sees the client's frames
// (decoded, JSON bodies parsed) and answers with reply/push.
class FakeSocket {
  static all = [];
  constructor(url, protocols) {
    this.url = url;
    this.protocols = protocols;
    this.sent = [];
    this.waiters = [];
    this.closed = false;
    FakeSocket.all.push(this);
    queueMicrotask(() => this.onopen?.());
  }
  send(bytes) {
    const f = decodeFrame(bytes);
    const req = { command: f.command, requestId: f.requestId, sequenceId: f.sequenceId, body: JSON.parse(new TextDecoder().decode(f.body)) };
    this.sent.push(req);
    for (const w of this.waiters.splice(0)) w();
  }
  close() { this.closed = true; }
  // next waits for the client's next frame of command cmd.
  async next(cmd) {
    for (;;) {
      const i = this.sent.findIndex((r) => r.command === cmd && !r.taken);
      if (i >= 0) {
        this.sent[i].taken = true;
        return this.sent[i];
      }
      await new Promise((r) => this.waiters.push(r));
    }
  }
  frame(cmd, requestId, seq, env, compress = false) {
    let body = new TextEncoder().encode(JSON.stringify(env));
    let bytes = encodeFrame(cmd, requestId, seq, body);
    if (compress) {
      body = deflateSync(body);
      bytes = encodeFrame(cmd, requestId, seq, new Uint8Array(body));
      new DataView(bytes.buffer).setUint16(5, 1);
    }
    this.onmessage?.({ data: bytes.buffer });
  }
  reply(req, data, { code = 0, msg = "", cmd, compress } = {}) {
    const final = cmd ?? { [Cmd.SEND_MESSAGE]: Cmd.SEND_ACK, [Cmd.SYNC_INBOX]: Cmd.SYNC_INBOX_FINISH, [Cmd.SYNC_MESSAGES]: Cmd.SYNC_MESSAGES_FINISH }[req.command] ?? req.command;
    this.frame(final, req.requestId, req.sequenceId, { code, msg, request_id: String(req.requestId), data: code ? null : data }, compress);
  }
  page(req, cmd, data) {
    this.frame(cmd, req.requestId, req.sequenceId, { code: 0, msg: "", request_id: String(req.requestId), data });
  }
  push(cmd, seq, data) { this.frame(cmd, 0, seq, { code: 0, msg: "", request_id: "0", data }); }
  drop(code = 1006) { this.closed = true; this.onclose?.({ code, reason: "" }); }
}

function newClient(extra = {}) {
  FakeSocket.all = [];
  return new Client({ url: "wss://api.example.test/ws", token: "tok", deviceId: 7, WebSocket: FakeSocket, backoffMinMs: 1, backoffMaxMs: 5, heartbeatMs: 60_000, ...extra });
}

// serveLogin answers AUTH and an empty catch-up on socket s.
async function serveLogin(s, inbox = { dialogs: [] }) {
  s.reply(await s.next(Cmd.AUTH), { user_id: 1, tenant_id: "t", device_id: 7, server_time: 1 });
  const sync = await s.next(Cmd.SYNC_INBOX);
  if (inbox.dialogs.length) s.page(sync, Cmd.SYNC_INBOX, { dialogs: inbox.dialogs, events: [] });
  s.reply(sync, { mailbox_seq: 0, dialog_score: 0, has_more: false });
}

async function socket(i) {
  while (FakeSocket.all.length <= i) await new Promise((r) => setTimeout(r, 1));
  return FakeSocket.all[i];
}

test("frames round-trip and anything but one frame is refused", () => {
  const f = decodeFrame(encodeFrame(Cmd.HEARTBEAT, 9n, 4, {}));
  assert.equal(f.command, Cmd.HEARTBEAT);
  assert.equal(f.requestId, 9n);
  assert.equal(f.sequenceId, 4);
  const one = encodeFrame(Cmd.HEARTBEAT, 1, 1, {});
  const two = new Uint8Array([...one, ...one]);
  for (const bad of [two, one.subarray(0, 10), new Uint8Array([0, 0, ...one.subarray(2)])]) {
    assert.throws(() => decodeFrame(bad), ImdError);
  }
  assert.throws(() => encodeFrame(Cmd.SEND_MESSAGE, 1, 1, new Uint8Array(65537)), (e) => e.code === Code.TOO_LARGE);
});

test("zlib bodies are inflated with DecompressionStream", async () => {
  const body = deflateSync(Buffer.from(JSON.stringify({ code: 0, msg: "", request_id: "3", data: { x: "y".repeat(2000) } })));
  const bytes = encodeFrame(Cmd.GET_HISTORY, 3, 3, new Uint8Array(body));
  new DataView(bytes.buffer).setUint16(5, 1);
  const env = await envelopeOf(decodeFrame(bytes));
  assert.equal(env.data.x.length, 2000);
});

test("a runtime without WebSocket is told at once to pass one; a passed one is used", () => {
  const opts = { url: "wss://api.example.test/ws", token: "tok", deviceId: 7 };
  for (const WebSocket of [null, {}]) {
    assert.throws(() => new Client({ ...opts, WebSocket }), (err) => err instanceof ImdError && /opts\.WebSocket/.test(err.message));
  }
  assert.equal(new Client({ ...opts, WebSocket: FakeSocket }).opts.WebSocket, FakeSocket);
});

test("connect authenticates with the subprotocol, then catches up", async () => {
  const c = newClient();
  const opened = c.connect();
  const s = await socket(0);
  assert.deepEqual(s.protocols, ["imd.v1"]);
  const auth = await s.next(Cmd.AUTH);
  // The live pushes come only to a connection that asks for them (PROTOCOL AUTH).
  assert.deepEqual(auth.body, { token: "tok", device_id: 7, subscribe: ["presence", "typing", "receipt"] });
  s.reply(auth, { user_id: 1, tenant_id: "t", device_id: 7, server_time: 1 });
  assert.equal((await opened).user_id, 1);
  const sync = await s.next(Cmd.SYNC_INBOX);
  assert.deepEqual(sync.body, { mailbox_seq: 0, dialog_score: 0, limit: 100 });
  s.reply(sync, { mailbox_seq: 0, dialog_score: 0, has_more: false });
  c.close();
});

test("a bad token is final: connect rejects and nothing retries", async () => {
  const c = newClient();
  const opened = c.connect();
  const s = await socket(0);
  s.reply(await s.next(Cmd.AUTH), null, { code: Code.UNAUTHENTICATED, msg: "bad token" });
  await assert.rejects(opened, (e) => e.code === Code.UNAUTHENTICATED);
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(FakeSocket.all.length, 1);
  assert.equal(c.state, "closed");
});

test("an unacknowledged send is resent with its client_msg_id after a reconnect", async () => {
  const c = newClient();
  const opened = c.connect();
  const s0 = await socket(0);
  await serveLogin(s0);
  await opened;
  const sent = c.send({ topic: "grp_1", content: { text: "hi" } });
  const first = await s0.next(Cmd.SEND_MESSAGE);
  assert.ok(first.body.client_msg_id);
  s0.drop(); // no SEND_ACK: the connection went first
  const s1 = await socket(1);
  await serveLogin(s1);
  const again = await s1.next(Cmd.SEND_MESSAGE);
  assert.equal(again.body.client_msg_id, first.body.client_msg_id);
  s1.reply(again, { msg_id: 5, seq: 3, topic: "grp_1", conversation_id: 1, client_msg_id: again.body.client_msg_id, server_time: 1 });
  assert.equal((await sent).seq, 3);
  c.close();
});

test("a refused send rejects with its code; a busy one waits for the next connection", async () => {
  const c = newClient();
  const opened = c.connect();
  const s0 = await socket(0);
  await serveLogin(s0);
  await opened;
  const refused = c.send({ topic: "grp_1", content: {} });
  s0.reply(await s0.next(Cmd.SEND_MESSAGE), null, { code: Code.FORBIDDEN, msg: "not a member" });
  await assert.rejects(refused, (e) => e.code === Code.FORBIDDEN);
  const busy = c.send({ topic: "grp_1", content: {} });
  const b = await s0.next(Cmd.SEND_MESSAGE);
  s0.reply(b, null, { code: Code.BUSY, msg: "retry" });
  s0.drop();
  const s1 = await socket(1);
  await serveLogin(s1);
  const again = await s1.next(Cmd.SEND_MESSAGE);
  assert.equal(again.body.client_msg_id, b.body.client_msg_id);
  s1.reply(again, { msg_id: 1, seq: 1, topic: "grp_1", conversation_id: 1, client_msg_id: b.body.client_msg_id, server_time: 1 });
  await busy;
  c.close();
});

test("MESSAGE pushes are acknowledged with their sequence id and delivered once", async () => {
  const c = newClient();
  const got = [];
  c.on("message", (m) => got.push(m.seq));
  const opened = c.connect();
  const s = await socket(0);
  await serveLogin(s);
  await opened;
  const m = { topic: "grp_1", seq: 4, msg_id: 40, from: 2, type: "text", content: { text: "x" } };
  s.push(Cmd.MESSAGE, 11, m);
  s.push(Cmd.MESSAGE, 12, m); // a repeat: acknowledged, not delivered again
  const ack1 = await s.next(Cmd.PUSH_ACK);
  const ack2 = await s.next(Cmd.PUSH_ACK);
  assert.deepEqual([ack1.sequenceId, ack2.sequenceId], [11, 12]);
  assert.equal(ack1.requestId, 0n);
  assert.deepEqual(got, [4]);
  c.close();
});

// reloaded connects a client whose store says it has grp_1 up to seq 3, as after a page
// reload, and returns it, the seqs it is given, and its socket waiting for its SYNC_INBOX.
async function reloaded() {
  const store = new MemoryStore();
  store.set("imd:7:seqs", JSON.stringify({ grp_1: 3 }));
  const c = newClient({ store });
  const got = [];
  c.on("message", (m) => got.push(m.seq));
  const opened = c.connect();
  const s = await socket(0);
  s.reply(await s.next(Cmd.AUTH), { user_id: 1 });
  await opened;
  return { c, store, got, s, sync: await s.next(Cmd.SYNC_INBOX) };
}

test("after a reload the missed messages are caught up through SYNC_MESSAGES", async () => {
  const { c, store, got, s, sync } = await reloaded();
  s.page(sync, Cmd.SYNC_INBOX, { dialogs: [{ topic: "grp_1", last_seq: 5 }, { topic: "grp_2", last_seq: 9 }], events: [] });
  s.reply(sync, { mailbox_seq: 2, dialog_score: 99, has_more: false });
  const sm = await s.next(Cmd.SYNC_MESSAGES);
  assert.deepEqual(sm.body, { topic: "grp_1", since_seq: 3, limit: 200 });
  s.page(sm, Cmd.SYNC_MESSAGES, { messages: [{ topic: "grp_1", seq: 4 }, { topic: "grp_1", seq: 5 }] });
  s.reply(sm, { topic: "grp_1", last_seq: 5, has_more: false });
  while (got.length < 2) await new Promise((r) => setTimeout(r, 1));
  assert.deepEqual(got, [4, 5]);
  assert.deepEqual(JSON.parse(store.get("imd:7:inbox")), { mailbox_seq: 2, dialog_score: 99 });
  assert.equal(JSON.parse(store.get("imd:7:seqs")).grp_1, 5);
  c.close();
});

test("heartbeats keep the connection; a KICK replaced stops reconnecting", async () => {
  const c = newClient({ heartbeatMs: 5 });
  const opened = c.connect();
  const s = await socket(0);
  await serveLogin(s);
  await opened;
  const hb = await s.next(Cmd.HEARTBEAT);
  s.reply(hb, { server_time: 2 });
  const kicks = [];
  c.on("kick", (k) => kicks.push(k.reason));
  s.push(Cmd.KICK, 1, { reason: "replaced" });
  while (c.state !== "kicked") await new Promise((r) => setTimeout(r, 1));
  s.drop(1000);
  await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(kicks, ["replaced"]);
  assert.equal(FakeSocket.all.length, 1);
});

test("a lost connection is retried with backoff until it opens", async () => {
  const c = newClient();
  const states = [];
  c.on("state", (s) => states.push(s));
  const opened = c.connect();
  (await socket(0)).drop();
  (await socket(1)).drop();
  await serveLogin(await socket(2));
  await opened;
  assert.equal(c.state, "open");
  assert.ok(states.includes("connecting"));
  c.close();
});

test("the reconnect backoff doubles up to its cap, each wait a random half to all of it", () => {
  const cases = [
    { attempt: 0, low: 250, high: 500 },
    { attempt: 1, low: 500, high: 1000 },
    { attempt: 3, low: 2000, high: 4000 },
    { attempt: 10, low: 15_000, high: 30_000 }, // capped at max
  ];
  for (const { attempt, low, high } of cases) {
    assert.equal(backoffDelay(attempt, 500, 30_000, () => 0), low);
    assert.equal(backoffDelay(attempt, 500, 30_000, () => 1), high);
  }
  // Clients drained at once spread out: a hundred first waits are not one instant.
  const waits = new Set(Array.from({ length: 100 }, () => backoffDelay(0, 500, 30_000)));
  assert.ok(waits.size > 50, `only ${waits.size} distinct waits of 100`);
  for (const w of waits) assert.ok(w >= 250 && w <= 500, `wait ${w} outside 250-500`);
});

test("a KICK shutdown (a node draining) is followed by a reconnect, not a stop", async () => {
  const c = newClient();
  const kicks = [];
  c.on("kick", (k) => kicks.push(k.reason));
  const opened = c.connect();
  const s = await socket(0);
  await serveLogin(s);
  await opened;
  s.push(Cmd.KICK, 1, { reason: "shutdown" });
  s.drop(1000);
  await serveLogin(await socket(1));
  while (c.state !== "open") await new Promise((r) => setTimeout(r, 1));
  assert.deepEqual(kicks, ["shutdown"]);
  c.close();
});

test("a live push that beats the catch-up does not hide the messages under it", { timeout: 10_000 }, async () => {
  const { c, store, got, s, sync } = await reloaded();
  // A reconnect's first live push arrives before its catch-up asked for anything.
  s.push(Cmd.MESSAGE, 1, { topic: "grp_1", seq: 7 });
  s.page(sync, Cmd.SYNC_INBOX, { dialogs: [{ topic: "grp_1", last_seq: 7 }], events: [] });
  s.reply(sync, { mailbox_seq: 0, dialog_score: 99, has_more: false });
  const sm = await s.next(Cmd.SYNC_MESSAGES);
  assert.equal(sm.body.since_seq, 3, "catch-up must start under the gap, not at the live push");
  s.page(sm, Cmd.SYNC_MESSAGES, { messages: [4, 5, 6, 7].map((seq) => ({ topic: "grp_1", seq })) });
  s.reply(sm, { topic: "grp_1", last_seq: 7, has_more: false });
  while (got.length < 4) await new Promise((r) => setTimeout(r, 1));
  await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(got, [7, 4, 5, 6]); // each once
  assert.equal(JSON.parse(store.get("imd:7:seqs")).grp_1, 7);
  c.close();
});

test("a catch-up asks for conversations from a few seconds below its cursor, and moves the cursor only at its end", { timeout: 10_000 }, async () => {
  const store = new MemoryStore();
  store.set("imd:7:inbox", JSON.stringify({ mailbox_seq: 4, dialog_score: 50_000 }));
  const c = newClient({ store });
  const opened = c.connect();
  const s = await socket(0);
  s.reply(await s.next(Cmd.AUTH), { user_id: 1 });
  await opened;
  const sync = await s.next(Cmd.SYNC_INBOX);
  assert.equal(sync.body.dialog_score, 40_000);
  assert.equal(sync.body.mailbox_seq, 4);
  s.page(sync, Cmd.SYNC_INBOX, { dialogs: [{ topic: "grp_1", last_seq: 2 }], events: [] });
  s.reply(sync, { mailbox_seq: 6, dialog_score: 60_000, has_more: false });
  while (JSON.parse(store.get("imd:7:inbox")).dialog_score !== 60_000) await new Promise((r) => setTimeout(r, 1));
  assert.deepEqual(JSON.parse(store.get("imd:7:inbox")), { mailbox_seq: 6, dialog_score: 60_000 });
  c.close();
});

test("recall, edit and message send their commands and answer the message", async () => {
  const c = newClient();
  const opened = c.connect();
  const s0 = await socket(0);
  await serveLogin(s0);
  await opened;
  const m = { topic: "grp_1", seq: 5, from: 1, type: "text", content: { text: "hi" }, status: "normal", version: 1 };
  for (const [call, cmd, body, answer] of [
    [() => c.recall("grp_1", 5), Cmd.RECALL_MESSAGE, { topic: "grp_1", seq: 5 }, { ...m, status: "recalled", version: 2 }],
    [() => c.edit("grp_1", 5, { text: "hi all" }, 1), Cmd.EDIT_MESSAGE, { topic: "grp_1", seq: 5, content: { text: "hi all" }, version: 1 }, { ...m, content: { text: "hi all" }, version: 2 }],
  ]) {
    const done = call();
    const req = await s0.next(cmd);
    assert.deepEqual(req.body, body);
    s0.reply(req, answer);
    assert.deepEqual(await done, answer);
  }
  // message(topic, seq) is the history page just above seq, and null when seq is gone.
  for (const [page, want] of [[[m], m], [[{ ...m, seq: 4 }], null], [[], null]]) {
    const got = c.message("grp_1", 5);
    const req = await s0.next(Cmd.GET_HISTORY);
    assert.deepEqual(req.body, { topic: "grp_1", before_seq: 6, limit: 1 });
    s0.reply(req, { messages: page });
    assert.deepEqual(await got, want);
  }
  c.close();
});

test("presence and typing: requests carry their bodies, pushes become events", async () => {
  const c = newClient();
  const seen = [];
  c.on("presence", (p) => seen.push(["presence", p]));
  c.on("typing", (n) => seen.push(["typing", n]));
  const opened = c.connect();
  const s = await socket(0);
  await serveLogin(s);
  await opened;

  const asked = c.presence([2, 3]);
  const q = await s.next(Cmd.QUERY_PRESENCE);
  assert.deepEqual(q.body, { user_ids: [2, 3] });
  s.reply(q, { presence: [{ user_id: 2, state: "online" }, { user_id: 3, state: "offline", last_seen: 9 }] });
  assert.deepEqual(await asked, [{ user_id: 2, state: "online" }, { user_id: 3, state: "offline", last_seen: 9 }]);

  const typed = c.typing("grp_1");
  const t1 = await s.next(Cmd.TYPING);
  assert.deepEqual(t1.body, { topic: "grp_1", typing: true });
  s.reply(t1, { expires_in: 6000 });
  assert.deepEqual(await typed, { expires_in: 6000 });
  const stopped = c.typing({ to_user: 2 }, false);
  const t2 = await s.next(Cmd.TYPING);
  assert.deepEqual(t2.body, { to_user: 2, typing: false });
  s.reply(t2, null, { code: Code.RATE_LIMITED, msg: "slow down" });
  await assert.rejects(stopped, (err) => err instanceof ImdError && err.code === Code.RATE_LIMITED);

  const hidden = c.settings({ hide_presence: true });
  const st = await s.next(Cmd.SETTINGS);
  assert.deepEqual(st.body, { hide_presence: true });
  s.reply(st, { hide_presence: true });
  assert.deepEqual(await hidden, { hide_presence: true });

  s.push(Cmd.PRESENCE, 21, { user_id: 2, state: "offline", last_seen: 10 });
  s.push(Cmd.TYPING_NOTICE, 22, { topic: "grp_1", conversation_id: 5, user_id: 2, typing: true, expires_in: 6000 });
  while (seen.length < 2) await new Promise((r) => setTimeout(r, 1));
  assert.deepEqual(seen, [
    ["presence", { user_id: 2, state: "offline", last_seen: 10 }],
    ["typing", { topic: "grp_1", conversation_id: 5, user_id: 2, typing: true, expires_in: 6000 }],
  ]);
  assert.equal(s.sent.filter((r) => r.command === Cmd.PUSH_ACK).length, 0, "live-only pushes are not acknowledged");
  c.close();
});

test("receipts: readState asks READ_STATE, RECEIPT pushes become receipt events", async () => {
  const c = newClient();
  const seen = [];
  c.on("receipt", (r) => seen.push(r));
  const opened = c.connect();
  const s = await socket(0);
  await serveLogin(s);
  await opened;

  const asked = c.readState("grp_1", 7);
  const q = await s.next(Cmd.READ_STATE);
  assert.equal(Cmd.READ_STATE, 32);
  assert.deepEqual(q.body, { topic: "grp_1", seq: 7 });
  const state = { topic: "grp_1", conversation_id: 5, seq: 7, read: 2, of: 3, readers: [2, 3] };
  s.reply(q, state);
  assert.deepEqual(await asked, state);
  const refused = c.readState("grp_1", 8);
  s.reply(await s.next(Cmd.READ_STATE), null, { code: Code.FORBIDDEN, msg: "only the sender" });
  await assert.rejects(refused, (err) => err instanceof ImdError && err.code === Code.FORBIDDEN);

  const hidden = c.settings({ hide_receipts: true });
  const st = await s.next(Cmd.SETTINGS);
  assert.deepEqual(st.body, { hide_receipts: true });
  s.reply(st, { hide_presence: false, hide_receipts: true });
  assert.deepEqual(await hidden, { hide_presence: false, hide_receipts: true });

  s.push(Cmd.RECEIPT, 23, { topic: "p2p_1_2", conversation_id: 6, user_id: 2, delivered_seq: 4 });
  s.push(Cmd.RECEIPT, 24, { topic: "p2p_1_2", conversation_id: 6, user_id: 2, read_seq: 4 });
  while (seen.length < 2) await new Promise((r) => setTimeout(r, 1));
  assert.deepEqual(seen, [
    { topic: "p2p_1_2", conversation_id: 6, user_id: 2, delivered_seq: 4 },
    { topic: "p2p_1_2", conversation_id: 6, user_id: 2, read_seq: 4 },
  ]);
  assert.equal(s.sent.filter((r) => r.command === Cmd.PUSH_ACK).length, 0, "receipts are not acknowledged");
  c.close();
});

test("reactions and pins are one request each, answered with the summary or the pins", async () => {
  const c = newClient();
  const opened = c.connect();
  const s = await socket(0);
  await serveLogin(s);
  await opened;
  const summary = { topic: "grp_7", seq: 12, reactions: [{ emoji: "👍", count: 2, mine: true }] };
  const added = c.addReaction("grp_7", 12, "👍");
  const add = await s.next(Cmd.ADD_REACTION);
  assert.deepEqual(add.body, { topic: "grp_7", seq: 12, emoji: "👍" });
  s.reply(add, summary);
  assert.deepEqual(await added, summary);

  const removed = c.removeReaction("grp_7", 12, "x".repeat(65));
  s.reply(await s.next(Cmd.REMOVE_REACTION), null, { code: Code.INVALID_ARGUMENT, msg: "emoji is longer than 64 bytes" });
  await assert.rejects(removed, (e) => e instanceof ImdError && e.code === Code.INVALID_ARGUMENT);

  const who = c.reactions("grp_7", 12);
  const list = await s.next(Cmd.GET_REACTIONS);
  assert.deepEqual(list.body, { topic: "grp_7", seq: 12 });
  s.reply(list, { topic: "grp_7", seq: 12, reactions: [{ emoji: "👍", user: 42, created_at: 1 }] });
  assert.deepEqual(await who, [{ emoji: "👍", user: 42, created_at: 1 }]);

  const pins = [{ seq: 12, pinned_by: 1, pinned_at: 2 }];
  for (const [call, cmd] of [[() => c.pin("grp_7", 12), Cmd.PIN_MESSAGE], [() => c.unpin("grp_7", 12), Cmd.UNPIN_MESSAGE]]) {
    const done = call();
    const req = await s.next(cmd);
    assert.deepEqual(req.body, { topic: "grp_7", seq: 12 });
    s.reply(req, { topic: "grp_7", pins });
    assert.deepEqual(await done, pins);
  }
  const listed = c.pins("grp_7");
  const get = await s.next(Cmd.GET_PINS);
  assert.deepEqual(get.body, { topic: "grp_7" });
  s.reply(get, { topic: "grp_7", pins: [] });
  assert.deepEqual(await listed, []);
  c.close();
});

test("forward names the origin and the destination and keeps its client_msg_id", async () => {
  const c = newClient();
  const opened = c.connect();
  const s = await socket(0);
  await serveLogin(s);
  await opened;
  const ack = { msg_id: 9, seq: 5, topic: "p2p_1_43", conversation_id: 2, client_msg_id: "f-1", server_time: 3 };
  const done = c.forward("grp_7", 12, { to_user: 43 }, "f-1");
  const req = await s.next(Cmd.FORWARD_MESSAGE);
  assert.deepEqual(req.body, { from_topic: "grp_7", from_seq: 12, to_user: 43, client_msg_id: "f-1" });
  s.reply(req, ack);
  assert.deepEqual(await done, ack);

  const refused = c.forward("grp_8", 1, { topic: "grp_7" });
  const denied = await s.next(Cmd.FORWARD_MESSAGE);
  assert.ok(denied.body.client_msg_id.length > 0);
  s.reply(denied, null, { code: Code.FORBIDDEN, msg: "not a member" });
  await assert.rejects(refused, (e) => e instanceof ImdError && e.code === Code.FORBIDDEN);
  c.close();
});

test("push tokens: setPushToken and deletePushToken are PUSH_TOKEN_SET and PUSH_TOKEN_DELETE", async () => {
  const c = newClient();
  const opened = c.connect();
  const s = await socket(0);
  await serveLogin(s);
  await opened;

  const token = { device_id: "pixel", platform: "fcm", app_id: "proj", token: "t-1" };
  const set = c.setPushToken(token);
  const q = await s.next(Cmd.PUSH_TOKEN_SET);
  assert.equal(Cmd.PUSH_TOKEN_SET, 33);
  assert.deepEqual(q.body, token);
  s.reply(q, token);
  assert.deepEqual(await set, token);

  const gone = c.deletePushToken("pixel");
  const d = await s.next(Cmd.PUSH_TOKEN_DELETE);
  assert.equal(Cmd.PUSH_TOKEN_DELETE, 34);
  assert.deepEqual(d.body, { device_id: "pixel" });
  s.reply(d, null, { code: Code.NOT_FOUND, msg: "no push token for this device" });
  await assert.rejects(gone, (e) => e instanceof ImdError && e.code === Code.NOT_FOUND);
  c.close();
});

// FakeClock holds the timers a PresenceRefresher sets; fire runs the one due and waits for
// its round to settle.
class FakeClock {
  constructor() { this.timers = []; this.waits = []; }
  setTimeout = (fn, ms) => { const t = { fn, ms }; this.timers.push(t); this.waits.push(ms); return t; };
  clearTimeout = (t) => { this.timers = this.timers.filter((x) => x !== t); };
  async fire() {
    assert.equal(this.timers.length, 1, "one timer set");
    this.timers.shift().fn();
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  }
}

// presenceServer is a client whose QUERY_PRESENCE answers each id with states[id] (a state, or
// a function of the round), recording the ids of every query; emit plays a PRESENCE push.
function presenceServer(states) {
  const listeners = new Set();
  const srv = {
    queries: [],
    fail: false,
    on(name, fn) { assert.equal(name, "presence"); listeners.add(fn); return srv; },
    off(name, fn) { listeners.delete(fn); return srv; },
    push(p) { for (const fn of listeners) fn(p); },
    listeners,
    async presence(ids) {
      assert.ok(ids.length <= 200, `a query of ${ids.length} ids`);
      srv.queries.push(ids);
      if (srv.fail) throw new ImdError(0, "not connected");
      return ids.map((id) => ({ user_id: id, state: states.get(id) ?? "offline" }));
    },
  };
  return srv;
}

test("PresenceRefresher asks again after unknown users with backoff until they are known", async (t) => {
  const cases = [
    { name: "backoff doubles from 2 s up to 30 s, then stops once known", unknownRounds: 6, waits: [2000, 4000, 8000, 16000, 30000, 30000] },
    { name: "known at the first re-query", unknownRounds: 1, waits: [2000] },
  ];
  for (const tc of cases) {
    await t.test(tc.name, async () => {
      const states = new Map([[42, "unknown"], [43, "online"]]);
      const srv = presenceServer(states);
      const clock = new FakeClock();
      const seen = [];
      const w = new PresenceRefresher(srv, (p) => seen.push(`${p.user_id}:${p.state}`), { setTimeout: clock.setTimeout, clearTimeout: clock.clearTimeout });
      const first = await w.query([42, 43]);
      assert.deepEqual(first.map((p) => p.state), ["unknown", "online"]);
      assert.deepEqual(w.pending, [42]);
      for (let round = 1; round <= tc.unknownRounds; round++) {
        if (round === tc.unknownRounds) states.set(42, "online");
        await clock.fire();
        assert.deepEqual(srv.queries.at(-1), [42], "only the unknown user is asked again");
      }
      assert.deepEqual(clock.waits, tc.waits);
      assert.equal(clock.timers.length, 0, "nothing left to ask");
      assert.deepEqual(w.pending, []);
      assert.equal(seen.at(-1), "42:online");
      // A later unknown answer starts again from the first wait.
      states.set(44, "unknown");
      await w.query([44]);
      assert.equal(clock.waits.at(-1), 2000);
      w.stop();
      assert.equal(clock.timers.length, 0);
      assert.equal(srv.listeners.size, 0);
    });
  }
});

test("PresenceRefresher batches at most 200 ids a query and drops users a push told about", async () => {
  const ids = Array.from({ length: 250 }, (_, i) => i + 1);
  const states = new Map(ids.map((id) => [id, "unknown"]));
  const srv = presenceServer(states);
  const clock = new FakeClock();
  const w = new PresenceRefresher(srv, () => {}, { setTimeout: clock.setTimeout, clearTimeout: clock.clearTimeout });
  await w.query(ids);
  assert.deepEqual(srv.queries.map((q) => q.length), [200, 50]);
  assert.equal(clock.timers.length, 1, "one timer for all of them");

  srv.push({ user_id: 1, state: "online" });
  srv.push({ user_id: 2, state: "offline", last_seen: 5 });
  await clock.fire();
  assert.deepEqual(srv.queries.slice(2).map((q) => q.length), [200, 48]);
  assert.ok(!srv.queries.slice(2).flat().includes(1), "a pushed user is not asked again");

  // A failed round keeps everyone for the next, a longer wait later.
  srv.fail = true;
  await clock.fire();
  assert.equal(w.pending.length, 248);
  srv.fail = false;
  for (const id of ids) states.set(id, "offline");
  await clock.fire();
  assert.deepEqual(clock.waits, [2000, 4000, 8000]);
  assert.deepEqual(w.pending, []);
  assert.equal(clock.timers.length, 0);
  w.stop();
});

test("PresenceRefresher asks nothing after stop", async () => {
  const srv = presenceServer(new Map([[7, "unknown"]]));
  const clock = new FakeClock();
  const w = new PresenceRefresher(srv, () => {}, { setTimeout: clock.setTimeout, clearTimeout: clock.clearTimeout });
  await w.query([7]);
  const timer = clock.timers[0];
  w.stop();
  assert.equal(clock.timers.length, 0);
  timer.fn(); // a timer that fired as it was cleared
  await new Promise((r) => setImmediate(r));
  assert.equal(srv.queries.length, 1);
});
