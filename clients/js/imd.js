// imd JavaScript SDK: the frame protocol of PROTOCOL.md over WebSocket (PROTOCOL §7), for browsers
// and any runtime with WebSocket and DecompressionStream. An ES module used as it is, no
// build step; types are in imd.d.ts beside it.
//
//   import { Client } from "https://api.example.com/sdk/imd.js";
//   const c = new Client({ url: "wss://api.example.com/ws", token, deviceId: 42 });
//   c.on("message", (m) => console.log(m.topic, m.seq, m.content));
//   await c.connect();
//   await c.send({ topic: "grp_1", type: "text", content: { text: "hi" } });
//
// What it does for its user: heartbeats, reconnects with backoff, resends unacknowledged
// sends with their client_msg_id (the server answers a resend with the first send's ack),
// catches up after every (re)connect through SYNC_INBOX and SYNC_MESSAGES, acknowledges
// MESSAGE pushes (PUSH_ACK) and inflates zlib bodies with DecompressionStream('deflate').
//
// A runtime without a global WebSocket (Node 18) passes an implementation of the browser's
// WebSocket API, such as the ws package's:
//
//   import { WebSocket } from "ws";
//   const c = new Client({ url, token, deviceId: 42, WebSocket });

export const SUBPROTOCOL = "imd.v1";

export const Cmd = Object.freeze({
  AUTH: 1, HEARTBEAT: 2, GENERATE_MSG_ID: 3, SEND_MESSAGE: 4, SEND_ACK: 5, MESSAGE: 6,
  PUSH_ACK: 7, READ_MESSAGE: 8, RECALL_MESSAGE: 9, SYNC_INBOX: 10, SYNC_INBOX_FINISH: 11,
  SYNC_MESSAGES: 12, SYNC_MESSAGES_FINISH: 13, KICK: 14, EDIT_MESSAGE: 15, DELETE_MESSAGES: 16,
  EVENT: 17, GET_HISTORY: 18, QUERY_PRESENCE: 19, PRESENCE: 20, TYPING: 21, TYPING_NOTICE: 22,
  SETTINGS: 23, RECEIPT: 24, ADD_REACTION: 25, REMOVE_REACTION: 26, GET_REACTIONS: 27,
  PIN_MESSAGE: 28, UNPIN_MESSAGE: 29, GET_PINS: 30, FORWARD_MESSAGE: 31, READ_STATE: 32,
  PUSH_TOKEN_SET: 33, PUSH_TOKEN_DELETE: 34,
});

export const Code = Object.freeze({
  OK: 0, INVALID_ARGUMENT: 40001, UNAUTHENTICATED: 40101, FORBIDDEN: 40301, NOT_FOUND: 40401,
  CONFLICT: 40901, TOO_LARGE: 41301, RATE_LIMITED: 42901, INTERNAL: 50001, BUSY: 50301,
});

const MAGIC = 0x494d;
const VERSION = 1;
export const HEADER_LEN = 23;

// DIALOG_REWIND_MS is how far below its dialog cursor catch-up asks (PROTOCOL §5 step 2).
const DIALOG_REWIND_MS = 10_000;
// PRESENCE_MAX is the most ids one QUERY_PRESENCE names (docs/PROTOCOL.md QUERY_PRESENCE).
const PRESENCE_MAX = 200;
// RECENT_MAX bounds the seqs a topic remembers above its watermark.
const RECENT_MAX = 1024;
export const MAX_BODY = 65536;
const FLAG_ZLIB = 1;
const MAX_INFLATED = 1 << 20;

/** An error response of the server (PROTOCOL §5), or a local failure with code 0. */
export class ImdError extends Error {
  constructor(code, msg) {
    super(msg);
    this.name = "ImdError";
    this.code = code;
  }
}

/** Encodes one frame (PROTOCOL §2); body is an object (JSON-encoded) or bytes. */
export function encodeFrame(command, requestId, sequenceId, body = {}) {
  const bytes = body instanceof Uint8Array ? body : new TextEncoder().encode(JSON.stringify(body));
  if (bytes.length > MAX_BODY) throw new ImdError(Code.TOO_LARGE, `body of ${bytes.length} bytes > ${MAX_BODY}`);
  const buf = new Uint8Array(HEADER_LEN + bytes.length);
  const v = new DataView(buf.buffer);
  v.setUint16(0, MAGIC);
  v.setUint8(2, VERSION);
  v.setUint16(3, command);
  v.setUint16(5, 0);
  v.setBigUint64(7, BigInt(requestId));
  v.setUint32(15, sequenceId >>> 0);
  v.setUint32(19, bytes.length);
  buf.set(bytes, HEADER_LEN);
  return buf;
}

/**
 * Decodes one WebSocket message into its frame; the body stays raw (maybe compressed).
 * Throws on anything that is not exactly one frame.
 */
export function decodeFrame(data) {
  const buf = data instanceof Uint8Array ? data : new Uint8Array(data);
  if (buf.length < HEADER_LEN) throw new ImdError(0, `frame of ${buf.length} bytes is shorter than its header`);
  const v = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  if (v.getUint16(0) !== MAGIC) throw new ImdError(0, "bad magic");
  if (v.getUint8(2) !== VERSION) throw new ImdError(0, "unknown version");
  const flags = v.getUint16(5);
  if (flags & ~FLAG_ZLIB) throw new ImdError(0, "unknown flags");
  const bodyLen = v.getUint32(19);
  if (bodyLen > MAX_BODY) throw new ImdError(0, "body too large");
  if (buf.length !== HEADER_LEN + bodyLen) throw new ImdError(0, "message is not exactly one frame");
  return {
    command: v.getUint16(3),
    flags,
    requestId: v.getBigUint64(7),
    sequenceId: v.getUint32(15),
    body: buf.subarray(HEADER_LEN),
  };
}

/** Inflates a zlib (RFC 1950) body, refusing more than 1 MiB. */
export async function inflate(bytes) {
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"));
  const reader = stream.getReader();
  const parts = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > MAX_INFLATED) {
      await reader.cancel();
      throw new ImdError(0, "body inflates past 1 MiB");
    }
    parts.push(value);
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** The envelope {code,msg,request_id,data} of a server frame. */
export async function envelopeOf(frame) {
  const body = frame.flags & FLAG_ZLIB ? await inflate(frame.body) : frame.body;
  if (body.length === 0) return { code: 0, msg: "", request_id: String(frame.requestId), data: null };
  return JSON.parse(new TextDecoder().decode(body));
}

/** The final response command of a request (PROTOCOL §2). */
function finalCommand(cmd) {
  switch (cmd) {
    case Cmd.SEND_MESSAGE: return Cmd.SEND_ACK;
    case Cmd.SYNC_INBOX: return Cmd.SYNC_INBOX_FINISH;
    case Cmd.SYNC_MESSAGES: return Cmd.SYNC_MESSAGES_FINISH;
    default: return cmd;
  }
}

/** A cursor store kept in memory; pass one backed by localStorage to survive reloads. */
/**
 * The wait before reconnect attempt `attempt` (0 first): min doubled per failed attempt up to
 * max, then a random half to all of it, so the clients a stopping server drains (KICK
 * "shutdown") or a restarted one lost do not all come back at the same instant (PROTOCOL §5).
 */
export function backoffDelay(attempt, minMs, maxMs, random = Math.random) {
  const base = Math.min(maxMs, minMs * 2 ** attempt);
  return base / 2 + random() * (base / 2);
}

export class MemoryStore {
  constructor() { this.map = new Map(); }
  get(key) { return this.map.get(key) ?? null; }
  set(key, value) { this.map.set(key, value); }
}

function randomId() {
  if (globalThis.crypto?.randomUUID) return globalThis.crypto.randomUUID();
  return `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
}

/**
 * A connection to imd that keeps itself alive. Events (on/off): "state" (connecting|open|
 * closed|kicked), "message" (message object; live and caught up, each (topic, seq) once),
 * "read" (read watermark of another device), "event" (EVENT push data), "presence" (a friend
 * or group member came online or went offline), "typing" (another member typing, or not),
 * "receipt" (the P2P peer read up to read_seq, or a device of theirs got delivered_seq),
 * "dialogs" (dialogs from SYNC_INBOX), "kick" ({reason}), "error" (Error).
 */
export class Client {
  constructor(opts) {
    if (!opts?.url || !opts.token || !opts.deviceId) throw new ImdError(0, "url, token and deviceId are required");
    this.opts = {
      heartbeatMs: 30_000, requestTimeoutMs: 15_000, backoffMinMs: 500, backoffMaxMs: 30_000,
      syncLimit: 200, store: new MemoryStore(), WebSocket: globalThis.WebSocket,
      subscribe: ["presence", "typing", "receipt"], ...opts,
    };
    // Without one, every connect would fail and retry for ever: say so at once.
    if (typeof this.opts.WebSocket !== "function") {
      throw new ImdError(0, "no WebSocket in this runtime: pass opts.WebSocket (e.g. the ws package's on Node 18)");
    }
    this.listeners = new Map();
    this.ws = null;
    this.state = "closed";
    this.nextRequest = 1;
    this.pending = new Map(); // request id → {cmd, final, pages, resolve, reject, timer}
    this.outbox = new Map(); // client_msg_id → {req, resolve, reject}
    this.attempt = 0;
    this.stopped = true;
    this.identity = null;
    this.inboxCursor = this.load("inbox") ?? { mailbox_seq: 0, dialog_score: 0 };
    // topic → the seq up to which every message was handed to "message" (PROTOCOL §5's
    // have[topic]); catch-up asks from there, so a gap under a later live push is filled.
    this.seqs = this.load("seqs") ?? {};
    this.floor = { ...this.seqs }; // topic → seq up to which earlier sessions handed over
    this.recent = new Map(); // topic → the seqs above this.seqs handed over in this session
  }

  on(name, fn) {
    if (!this.listeners.has(name)) this.listeners.set(name, new Set());
    this.listeners.get(name).add(fn);
    return this;
  }

  off(name, fn) {
    this.listeners.get(name)?.delete(fn);
    return this;
  }

  emit(name, value) {
    for (const fn of this.listeners.get(name) ?? []) {
      try { fn(value); } catch (err) { if (name !== "error") this.emit("error", err); }
    }
  }

  /** Connects and authenticates; resolves with AUTH's data. Reconnects on its own after. */
  connect() {
    this.stopped = false;
    return new Promise((resolve, reject) => {
      this.firstOpen = { resolve, reject };
      this.open();
    });
  }

  /** Closes for good: no reconnect; unacknowledged sends are rejected. */
  close() {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    this.teardown(new ImdError(0, "client closed"));
    for (const [id, o] of this.outbox) {
      o.reject(new ImdError(0, "client closed"));
      this.outbox.delete(id);
    }
    this.setState("closed");
  }

  /**
   * Sends a message (PROTOCOL §4) and resolves with its SEND_ACK data. A client_msg_id is chosen when
   * missing; until acknowledged the send is repeated, with that id, after every reconnect.
   */
  send(req) {
    const full = { client_msg_id: randomId(), type: "text", ...req };
    return new Promise((resolve, reject) => {
      this.outbox.set(full.client_msg_id, { req: full, resolve, reject });
      if (this.state === "open") this.flushOne(full.client_msg_id);
    });
  }

  /**
   * The whole conversation list: SYNC_INBOX from the start, apart from the catch-up cursor
   * (which only brings what changed). Mailbox events are left to the catch-up.
   */
  async dialogs() {
    const out = [];
    for (let cursor = { mailbox_seq: 0, dialog_score: 0 }; ;) {
      const { pages, data } = await this.stream(Cmd.SYNC_INBOX, { ...cursor, limit: 100 });
      for (const p of pages) out.push(...(p.dialogs ?? []));
      if (!data.has_more || data.dialog_score === cursor.dialog_score) return out;
      cursor = { mailbox_seq: data.mailbox_seq, dialog_score: data.dialog_score };
    }
  }

  /** Marks the conversation read up to seq (READ_MESSAGE); resolves with the watermark. */
  markRead(topic, seq) { return this.request(Cmd.READ_MESSAGE, { topic, seq }); }

  /** Recalls an own message (RECALL_MESSAGE); resolves with it, status "recalled". */
  recall(topic, seq) { return this.request(Cmd.RECALL_MESSAGE, { topic, seq }); }

  /**
   * Edits an own message (EDIT_MESSAGE) from version, the one last seen; resolves with it at
   * its next version. A stale version rejects with Code.CONFLICT: fetch it (message) and retry.
   */
  edit(topic, seq, content, version) { return this.request(Cmd.EDIT_MESSAGE, { topic, seq, content, version }); }

  /**
   * One message of topic as it is now, or null when it is gone (deleted for this user). A
   * change arrives as a system message naming the seq (PROTOCOL §4), so this is how an app
   * refreshes its copy, or finds the message a reply quotes.
   */
  async message(topic, seq) {
    const [m] = await this.history(topic, seq + 1, 1);
    return m?.seq === seq ? m : null;
  }

  /**
   * Who of userIds (at most 200) is online, and when the others were last seen (QUERY_PRESENCE).
   * A state may be "unknown" while the server's registry heals: PresenceRefresher asks again.
   */
  async presence(userIds) {
    const data = await this.request(Cmd.QUERY_PRESENCE, { user_ids: userIds });
    return data.presence ?? [];
  }

  /**
   * Tells the other members of the conversation (topic, or {topic|conversation_id|to_user})
   * that the user is typing (TYPING); send again every few seconds while typing, and with
   * typing false when done. Resolves with {expires_in}.
   */
  typing(conversation, typing = true) {
    const address = typeof conversation === "string" ? { topic: conversation } : conversation;
    return this.request(Cmd.TYPING, { ...address, typing });
  }

  /**
   * Who of the other members read message seq of topic, which the user sent (READ_STATE):
   * resolves with {topic, conversation_id, seq, read, of, readers?}; readers only in
   * conversations up to the server's receipts.group_limit members.
   */
  readState(topic, seq) { return this.request(Cmd.READ_STATE, { topic, seq }); }

  /**
   * Registers this device's APNs or FCM token (PUSH_TOKEN_SET): {device_id, platform: "apns" |
   * "fcm", app_id, token, locale?}. Resolves with the token as stored.
   */
  setPushToken(token) { return this.request(Cmd.PUSH_TOKEN_SET, token); }

  /** Removes the device's push token (PUSH_TOKEN_DELETE); 40401 when it has none. */
  deletePushToken(deviceId) { return this.request(Cmd.PUSH_TOKEN_DELETE, { device_id: deviceId }); }

  /** Changes the settings named in change (e.g. {hide_presence: true}); {} only reads them (SETTINGS). */
  settings(change = {}) { return this.request(Cmd.SETTINGS, change); }

  /** Newest-first history page of topic before beforeSeq (0: the newest). */
  async history(topic, beforeSeq = 0, limit = 50) {
    const data = await this.request(Cmd.GET_HISTORY, { topic, before_seq: beforeSeq || undefined, limit });
    return data.messages ?? [];
  }

  /** Messages of topic after sinceSeq, ascending, every page until has_more is false. */
  async syncMessages(topic, sinceSeq = 0) {
    const out = [];
    for (let since = sinceSeq; ;) {
      const { pages, data } = await this.stream(Cmd.SYNC_MESSAGES, { topic, since_seq: since, limit: this.opts.syncLimit });
      for (const p of pages) out.push(...(p.messages ?? []));
      if (!data.has_more || data.last_seq <= since) return out;
      since = data.last_seq;
    }
  }

  /**
   * Puts the user's emoji on message seq of topic (ADD_REACTION), any month; resolves with the
   * message's reaction summary. Members learn it from a `system` message
   * {"event":"reaction",seq,emoji,action,count} of the topic.
   */
  addReaction(topic, seq, emoji) { return this.request(Cmd.ADD_REACTION, { topic, seq, emoji }); }

  /** Takes the user's emoji off the message (REMOVE_REACTION); resolves with the summary. */
  removeReaction(topic, seq, emoji) { return this.request(Cmd.REMOVE_REACTION, { topic, seq, emoji }); }

  /** Who reacted to the message with what, oldest first (GET_REACTIONS). */
  async reactions(topic, seq, limit = 0) {
    const data = await this.request(Cmd.GET_REACTIONS, { topic, seq, limit: limit || undefined });
    return data.reactions ?? [];
  }

  /** Pins the message (PIN_MESSAGE): group owner and admins, both members of a pair; resolves with the pins. */
  async pin(topic, seq) { return (await this.request(Cmd.PIN_MESSAGE, { topic, seq })).pins ?? []; }

  /** Unpins the message (UNPIN_MESSAGE); resolves with the pins left. */
  async unpin(topic, seq) { return (await this.request(Cmd.UNPIN_MESSAGE, { topic, seq })).pins ?? []; }

  /** The conversation's pinned messages, newest first (GET_PINS). */
  async pins(topic) { return (await this.request(Cmd.GET_PINS, { topic })).pins ?? []; }

  /**
   * Sends a copy of message fromSeq of fromTopic into the conversation `to` names
   * ({topic} | {conversation_id} | {to_user}) with content.forward = {topic, seq, msg_id, from}
   * (FORWARD_MESSAGE); resolves with the copy's SEND_ACK data. Pass the same clientMsgId to retry.
   */
  forward(fromTopic, fromSeq, to, clientMsgId = randomId()) {
    return this.request(Cmd.FORWARD_MESSAGE, { from_topic: fromTopic, from_seq: fromSeq, ...to, client_msg_id: clientMsgId });
  }

  /** Any request whose response is one frame; resolves with its data, rejects with ImdError. */
  async request(cmd, body = {}) { return (await this.stream(cmd, body)).data; }

  /** A request with its stream pages (SYNC_INBOX, SYNC_MESSAGES). */
  stream(cmd, body = {}) {
    if (this.state !== "open" && cmd !== Cmd.AUTH) return Promise.reject(new ImdError(Code.BUSY, "not connected"));
    return this.rawRequest(cmd, body);
  }

  // --- connection life ---

  open() {
    this.setState("connecting");
    let ws;
    try {
      ws = new this.opts.WebSocket(this.opts.url, [SUBPROTOCOL]);
    } catch (err) {
      this.lost(err);
      return;
    }
    ws.binaryType = "arraybuffer";
    this.ws = ws;
    ws.onopen = () => this.authenticate(ws);
    ws.onmessage = (ev) => { if (ws === this.ws) this.receive(ev.data); };
    ws.onclose = (ev) => { if (ws === this.ws) this.lost(new ImdError(0, `connection closed (${ev.code} ${ev.reason ?? ""})`)); };
    ws.onerror = () => {};
  }

  async authenticate(ws) {
    try {
      const body = { token: this.opts.token, device_id: this.opts.deviceId };
      if (this.opts.platform) body.platform = this.opts.platform;
      // The live pushes ("presence", "typing", "receipt" events) come only to a connection that asks.
      if (this.opts.subscribe.length) body.subscribe = this.opts.subscribe;
      const { data } = await this.rawRequest(Cmd.AUTH, body);
      if (ws !== this.ws) return;
      this.identity = data;
      this.attempt = 0;
      this.setState("open");
      this.startHeartbeat();
      this.firstOpen?.resolve(data);
      this.firstOpen = null;
      await this.catchUp();
      for (const id of this.outbox.keys()) this.flushOne(id);
    } catch (err) {
      if (err instanceof ImdError && err.code === Code.UNAUTHENTICATED) {
        // A bad or expired token does not get better by retrying.
        this.stopped = true;
        this.firstOpen?.reject(err);
        this.firstOpen = null;
        this.teardown(err);
        this.setState("closed");
        this.emit("error", err);
        return;
      }
      this.emit("error", err);
      this.lost(err);
    }
  }

  /** After every AUTH: the inbox since the stored cursor, then each dialog's missed messages. */
  async catchUp() {
    const dialogs = [];
    // From a few seconds below the dialog cursor: a conversation's score is written just after
    // its message is stored (PROTOCOL §5 step 2).
    let from = { ...this.inboxCursor, dialog_score: Math.max(0, this.inboxCursor.dialog_score - DIALOG_REWIND_MS) };
    for (;;) {
      const { pages, data } = await this.stream(Cmd.SYNC_INBOX, { ...from, limit: 100 });
      for (const p of pages) {
        dialogs.push(...(p.dialogs ?? []));
        for (const e of p.events ?? []) this.emit("event", e);
      }
      from = { mailbox_seq: data.mailbox_seq, dialog_score: Math.max(from.dialog_score, data.dialog_score) };
      if (!data.has_more) break;
    }
    if (dialogs.length) this.emit("dialogs", dialogs);
    for (const d of dialogs) {
      const known = this.seqs[d.topic];
      // A conversation never seen before starts at its newest: history is the app's to load.
      if (known === undefined) {
        this.seqs[d.topic] = this.floor[d.topic] = d.last_seq ?? 0;
        continue;
      }
      if ((d.last_seq ?? 0) > known) {
        for (const m of await this.syncMessages(d.topic, known)) this.deliver(m);
      }
    }
    this.save("seqs", this.seqs);
    // Only now: a catch-up cut short (a drained node's KICK) is redone in full (PROTOCOL §5
    // step 4). A live EVENT may have moved the mailbox cursor meanwhile.
    this.inboxCursor = {
      mailbox_seq: Math.max(this.inboxCursor.mailbox_seq, from.mailbox_seq),
      dialog_score: Math.max(this.inboxCursor.dialog_score, from.dialog_score),
    };
    this.save("inbox", this.inboxCursor);
  }

  flushOne(id) {
    const o = this.outbox.get(id);
    if (!o || o.inFlight) return;
    o.inFlight = true;
    this.rawRequest(Cmd.SEND_MESSAGE, o.req).then(({ data }) => {
      this.outbox.delete(id);
      this.remember(data.topic, data.seq); // its own message: never a "message" event
      o.resolve(data);
    }, (err) => {
      o.inFlight = false;
      // Busy, or the connection went: the next connection resends it with the same id.
      if (err instanceof ImdError && err.code !== 0 && err.code !== Code.BUSY) {
        this.outbox.delete(id);
        o.reject(err);
      }
    });
  }

  startHeartbeat() {
    clearInterval(this.heartbeat);
    const ws = this.ws;
    this.heartbeat = setInterval(() => {
      if (ws !== this.ws) return;
      this.rawRequest(Cmd.HEARTBEAT, {}).catch((err) => {
        if (ws === this.ws) this.lost(err);
      });
    }, this.opts.heartbeatMs);
  }

  lost(err) {
    this.teardown(err);
    if (this.stopped) {
      this.setState("closed");
      return;
    }
    this.setState("connecting");
    const delay = backoffDelay(this.attempt, this.opts.backoffMinMs, this.opts.backoffMaxMs);
    this.attempt++;
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => { if (!this.stopped) this.open(); }, delay);
  }

  teardown(err) {
    clearInterval(this.heartbeat);
    const ws = this.ws;
    this.ws = null;
    if (ws) {
      ws.onopen = ws.onmessage = ws.onclose = ws.onerror = null;
      try { ws.close(1000); } catch { /* already closed */ }
    }
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(err);
      this.pending.delete(id);
    }
    for (const o of this.outbox.values()) o.inFlight = false;
  }

  setState(s) {
    if (this.state === s) return;
    this.state = s;
    this.emit("state", s);
  }

  // --- frames ---

  rawRequest(cmd, body) {
    const ws = this.ws;
    if (!ws) return Promise.reject(new ImdError(0, "not connected"));
    const id = this.nextRequest++;
    const seq = id >>> 0;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new ImdError(0, `request ${cmd} timed out`));
      }, this.opts.requestTimeoutMs);
      this.pending.set(id, { cmd, final: finalCommand(cmd), pages: [], resolve, reject, timer });
      try {
        ws.send(encodeFrame(cmd, id, seq, body));
      } catch (err) {
        clearTimeout(timer);
        this.pending.delete(id);
        reject(err);
      }
    });
  }

  // receive handles server frames strictly in arrival order, even though inflating is async.
  receive(data) {
    this.inbound = (this.inbound ?? Promise.resolve()).then(() => this.handle(data)).catch((err) => this.emit("error", err));
  }

  async handle(data) {
    const ws = this.ws;
    if (typeof data === "string") throw new ImdError(0, "server sent a text message");
    const frame = decodeFrame(data);
    const env = await envelopeOf(frame);
    if (frame.requestId === 0n) {
      this.push(ws, frame, env);
      return;
    }
    const p = this.pending.get(Number(frame.requestId));
    if (!p) return; // timed out meanwhile
    if (frame.command !== p.final) {
      if (env.data) p.pages.push(env.data);
      return;
    }
    clearTimeout(p.timer);
    this.pending.delete(Number(frame.requestId));
    if (env.code !== Code.OK) p.reject(new ImdError(env.code, env.msg));
    else p.resolve({ pages: p.pages, data: env.data ?? {} });
  }

  push(ws, frame, env) {
    switch (frame.command) {
      case Cmd.MESSAGE:
        // Acknowledged at once (transport level, PROTOCOL §3): the app has it from here on.
        try { ws?.send(encodeFrame(Cmd.PUSH_ACK, 0, frame.sequenceId, {})); } catch { /* closing */ }
        this.deliver(env.data);
        break;
      case Cmd.READ_MESSAGE:
        this.emit("read", env.data);
        break;
      case Cmd.PRESENCE:
        this.emit("presence", env.data);
        break;
      case Cmd.TYPING_NOTICE:
        this.emit("typing", env.data);
        break;
      case Cmd.RECEIPT:
        this.emit("receipt", env.data);
        break;
      case Cmd.EVENT:
        if (env.data?.mailbox_seq > this.inboxCursor.mailbox_seq) {
          this.inboxCursor = { ...this.inboxCursor, mailbox_seq: env.data.mailbox_seq };
          this.save("inbox", this.inboxCursor);
        }
        this.emit("event", env.data);
        break;
      case Cmd.KICK: {
        const reason = env.data?.reason ?? "";
        this.emit("kick", { reason });
        if (reason === "replaced") {
          // Another connection of this device took over: fighting it back would loop.
          this.stopped = true;
          this.teardown(new ImdError(0, "kicked: " + reason));
          this.setState("kicked");
        }
        break;
      }
      default:
        break;
    }
  }

  // deliver hands each (topic, seq) to "message" once, live or caught up: a seq at or below
  // the floor (what an earlier session handed over) is old; above it, the topic's watermark
  // and the seqs above it (remember) drop the repeats a push racing a catch-up brings.
  deliver(m) {
    if (!m?.topic || m.seq <= (this.floor[m.topic] ?? 0) || !this.remember(m.topic, m.seq)) return;
    this.emit("message", m);
  }

  // remember notes seq of topic and reports whether it was new. The topic's watermark moves
  // only over contiguous seqs: a live push above a gap (pushes a reconnect gets before its
  // catch-up) leaves the gap for catch-up to fill. A hole that never fills (a seq never
  // stored) is stepped over once RECENT_MAX seqs wait above it, as the Go SDK does.
  remember(topic, seq) {
    if (this.seqs[topic] === undefined) this.seqs[topic] = seq - 1; // first seen live: before it is history
    let have = this.seqs[topic];
    let s = this.recent.get(topic);
    if (!s) this.recent.set(topic, (s = new Set()));
    if (seq <= have || s.has(seq)) return false;
    s.add(seq);
    const climb = () => { while (s.delete(have + 1)) have++; };
    climb();
    while (s.size > RECENT_MAX) {
      have = Math.min(...s);
      s.delete(have);
      climb();
    }
    if (have !== this.seqs[topic]) {
      this.seqs[topic] = have;
      this.save("seqs", this.seqs);
    }
    return true;
  }

  // load and save use the store as a Store (get/set) or as Web Storage (localStorage).
  load(key) {
    const st = this.opts.store;
    const v = st.getItem ? st.getItem(this.storeKey(key)) : st.get(this.storeKey(key));
    return v ? JSON.parse(v) : null;
  }

  save(key, value) {
    const st = this.opts.store;
    if (st.setItem) st.setItem(this.storeKey(key), JSON.stringify(value));
    else st.set(this.storeKey(key), JSON.stringify(value));
  }

  storeKey(key) { return `imd:${this.opts.deviceId}:${key}`; }
}

/**
 * PresenceRefresher asks again after the users whose presence the server answered `unknown`
 * (its registry heals after a Redis loss, docs/PROTOCOL.md QUERY_PRESENCE): opt in with one
 * per client and query through it. Every entry it reads goes to onPresence (a state, as a
 * PRESENCE push is), the first answer's included. The users still unknown are asked again,
 * together in queries of at most 200 ids, after firstMs, then twice as long each time up to
 * maxMs; a user leaves the round once an answer or a PRESENCE push tells their state. Why
 * opt-in and why the doubling: DESIGN §13 "Unknown until healed".
 */
export class PresenceRefresher {
  constructor(client, onPresence, opts = {}) {
    this.client = client;
    this.onPresence = onPresence;
    this.opts = { firstMs: 2000, maxMs: 30_000, setTimeout: globalThis.setTimeout.bind(globalThis), clearTimeout: globalThis.clearTimeout.bind(globalThis), ...opts };
    this.unknown = new Set();
    this.delay = this.opts.firstMs;
    this.timer = null;
    this.stopped = false;
    this.onPush = (p) => this.unknown.delete(p.user_id);
    client.on("presence", this.onPush);
  }

  /** Queries userIds (any number, 200 a query) and resolves with their entries. */
  async query(userIds) {
    const out = [];
    try {
      for (let i = 0; i < userIds.length; i += PRESENCE_MAX) {
        const got = await this.client.presence(userIds.slice(i, i + PRESENCE_MAX));
        for (const p of got) {
          if (p.state === "unknown") this.unknown.add(p.user_id);
          else this.unknown.delete(p.user_id);
        }
        for (const p of got) this.onPresence(p);
        out.push(...got);
      }
    } finally {
      this.schedule();
    }
    return out;
  }

  /** The users waiting to be asked again. */
  get pending() { return [...this.unknown]; }

  /** Asks no more; the client stays as it is. */
  stop() {
    this.stopped = true;
    this.opts.clearTimeout(this.timer);
    this.timer = null;
    this.client.off("presence", this.onPush);
  }

  schedule() {
    if (this.stopped || this.timer || this.asking) return;
    if (this.unknown.size === 0) {
      this.delay = this.opts.firstMs;
      return;
    }
    this.timer = this.opts.setTimeout(() => this.again(), this.delay);
  }

  async again() {
    this.timer = null;
    this.asking = true;
    this.delay = Math.min(this.opts.maxMs, this.delay * 2);
    try {
      if (!this.stopped) await this.query(this.pending);
    } catch {
      // Not connected, or timed out: the same users wait for the next round.
    } finally {
      this.asking = false;
    }
    this.schedule();
  }
}
