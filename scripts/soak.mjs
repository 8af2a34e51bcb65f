// scripts/soak's client, faults and summary (run it through scripts/soak,
// which finds Node and the module).  Two nginx: the endpoint (SOAK_WORKERS
// workers, mcp_builtin everything, on 127.0.0.1 and 127.0.0.2) and a
// gateway (mcp_pass to both addresses of the endpoint, mcp_affinity,
// keepalive 16).  SOAK_CLIENTS clients, even ones direct to the endpoint,
// odd ones through the gateway; each runs 2025-11-25 sessions (initialize,
// subscribe to test://watched-resource, a GET stream held open for the
// session's life, resumed with Last-Event-ID whenever it ends and closed
// by the client every 15 s and resumed; then rounds of tools/list, a JSON
// tools/call, an SSE tools/call, a sampling call whose request is
// answered on a new connection, and two 2026-07-28 stateless calls;
// DELETE after about SOAK_SESSION_SECONDS).  A trigger session calls
// update_watched_resource every 5 s: every session must see each one on
// its GET stream.
//
// A reply is checked by its id: ids are "<client>.<session>.<n>", so a
// reply with another session's prefix crossed sessions, one with its own
// prefix but not the request's is a wrong id, and one seen twice (on a
// stream and again after a resume) is duplicated.  A POST stream cut
// before its reply is resumed with GET and Last-Event-ID (up to
// SOAK_RESUME_WAIT s); what never gets a reply is lost.  A request that
// fails on a reused keep-alive connection before any byte of a reply is
// sent again once on a new connection (as HTTP clients do: the server may
// close an idle connection at any time, a reload closes them all) and
// counted apart.
//
// Settings (environment): SOAK_MINUTES (20), SOAK_CLIENTS (32),
// SOAK_WORKERS (4), SOAK_HALF_SENT (200), SOAK_RELOAD_SECONDS (30),
// SOAK_KILL_SECONDS (120), SOAK_RESTART_AT (seconds into the run; default
// 55% of it and 8 s, away from a reload; 0: no restart),
// SOAK_SESSION_SECONDS (60, +-20%: a session's life), SOAK_PAUSE_MS (0,
// between a client's rounds), SOAK_TIMEOUT (30 s a request),
// SOAK_RESUME_WAIT (10), SOAK_SAMPLE_SECONDS (10), SOAK_LOG_LEVEL
// (notice), SOAK_KEEP (1: keep the directory with the logs), NGINX
// (/usr/sbin/nginx), MCP_MODULE, MCP_FIXTURES_MODULE.

import http from 'node:http';
import net from 'node:net';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';

const env = process.env;
const num = (name, def) => (env[name] === undefined || env[name] === ''
                            ? def : Number(env[name]));

const MINUTES = num('SOAK_MINUTES', 20);
const CLIENTS = num('SOAK_CLIENTS', 32);
const WORKERS = num('SOAK_WORKERS', 4);
const HALF_SENT = num('SOAK_HALF_SENT', 200);
const RELOAD_S = num('SOAK_RELOAD_SECONDS', 30);
const KILL_S = num('SOAK_KILL_SECONDS', 120);
const DURATION = MINUTES * 60;
const RESTART_AT = num('SOAK_RESTART_AT', Math.round(DURATION * 0.55) + 8);
const SESSION_S = num('SOAK_SESSION_SECONDS', 60);
const PAUSE_MS = num('SOAK_PAUSE_MS', 0);
const TIMEOUT = num('SOAK_TIMEOUT', 30) * 1000;
const RESUME_WAIT = num('SOAK_RESUME_WAIT', 10) * 1000;
const SAMPLE_S = num('SOAK_SAMPLE_SECONDS', 10);
const TRIGGER_S = 5;
const LOG_LEVEL = env.SOAK_LOG_LEVEL || 'notice';
const NGINX = env.NGINX || '/usr/sbin/nginx';
const MODULE = env.MCP_MODULE;

if (!MODULE || !fs.existsSync(MODULE)) {
    console.error('soak: MCP_MODULE is not set or missing (run scripts/soak)');
    process.exit(2);
}

const FIXTURES = env.MCP_FIXTURES_MODULE
    || path.join(path.dirname(MODULE), 'ngx_http_mcp_fixtures_module.so');

const T0 = Date.now();
const now = () => (Date.now() - T0) / 1000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let running = true;

function log(msg) {
    process.stderr.write(`soak: [${now().toFixed(0).padStart(5)} s] ${msg}\n`);
}


// ---------------------------------------------------------------- nginx

const prefix = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-soak.'));
fs.chmodSync(prefix, 0o755);    /* the workers (nobody) reach mcp_ipc */

function freePort() {
    return new Promise((resolve, reject) => {
        const s = net.createServer();
        s.on('error', reject);
        s.listen(0, '127.0.0.1', () => {
            const p = s.address().port;
            s.close(() => resolve(p));
        });
    });
}

function confHead(workers) {
    return `load_module  ${MODULE};
${fs.existsSync(FIXTURES) ? `load_module  ${FIXTURES};` : ''}

worker_processes  ${workers};
worker_rlimit_nofile  8192;
error_log  logs/error.log  ${LOG_LEVEL};
pid        logs/nginx.pid;

events {
    worker_connections  4096;
}
`;
}

function endpointConf(port) {
    return confHead(WORKERS) + `
http {
    access_log  off;
    client_body_temp_path  tmp;

    mcp_session_zone  zone=soak:32m;

    server {
        listen  127.0.0.1:${port};
        listen  127.0.0.2:${port};

        location = /mcp {
            mcp          on;
            mcp_session  soak;
            mcp_builtin  everything;
        }

        location = /metrics {
            mcp_metrics;
        }
    }
}
`;
}

function gatewayConf(port, upport) {
    return confHead(2) + `
http {
    access_log  off;
    client_body_temp_path  tmp;

    mcp_session_zone  zone=gateway:16m;

    upstream soak_mcp {
        mcp_affinity;
        server     127.0.0.1:${upport};
        server     127.0.0.2:${upport};
        keepalive  16;
    }

    server {
        listen  127.0.0.1:${port};

        location = /mcp {
            mcp_pass     http://soak_mcp/mcp;
            mcp_session  gateway;
        }

        location = /metrics {
            mcp_metrics;
        }
    }
}
`;
}

function nginxRun(n, args) {
    const r = spawnSync(NGINX, ['-p', n.dir + '/', '-c', 'conf/nginx.conf',
                                ...args], { encoding: 'utf8' });
    if (r.status !== 0) {
        log(`nginx ${args.join(' ')} (${n.name}): ${r.stderr.trim()}`);
    }
    return r.status === 0;
}

function masterPid(n) {
    try {
        return Number(fs.readFileSync(path.join(n.dir, 'logs/nginx.pid'),
                                      'utf8').trim());
    } catch (e) {
        return 0;
    }
}

function alive(pid) {
    try {
        process.kill(pid, 0);
        return true;
    } catch (e) {
        return false;
    }
}

// the workers of an nginx: [{ pid, old (shutting down), rss (kB) }]
function workers(n) {
    const master = masterPid(n);
    const out = [];
    if (!master) {
        return out;
    }
    for (const d of fs.readdirSync('/proc')) {
        if (!/^\d+$/.test(d)) {
            continue;
        }
        try {
            const st = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
            const ppid = Number(st.slice(st.lastIndexOf(')') + 2)
                                  .split(' ')[1]);
            if (ppid !== master) {
                continue;
            }
            const cmd = fs.readFileSync(`/proc/${d}/cmdline`, 'utf8');
            if (!cmd.startsWith('nginx: worker process')) {
                continue;
            }
            const status = fs.readFileSync(`/proc/${d}/status`, 'utf8');
            const m = status.match(/^VmRSS:\s+(\d+)/m);
            out.push({ pid: Number(d), old: /shutting down/.test(cmd),
                       rss: m ? Number(m[1]) : 0 });
        } catch (e) {
            /* gone meanwhile */
        }
    }
    return out;
}

async function waitAnswering(port) {
    for (let i = 0; i < 100; i++) {
        const ok = await new Promise((resolve) => {
            const s = net.connect(port, '127.0.0.1');
            s.on('connect', () => { s.destroy(); resolve(true); });
            s.on('error', () => resolve(false));
        });
        if (ok) {
            return true;
        }
        await sleep(100);
    }
    return false;
}

async function startNginx(n) {
    if (!nginxRun(n, [])) {
        throw new Error(`${n.name} did not start`);
    }
    if (!await waitAnswering(n.port)) {
        throw new Error(`${n.name} does not answer on ${n.port}`);
    }
}

async function stopNginx(n, signal) {
    const master = masterPid(n);
    nginxRun(n, ['-s', signal]);
    for (let i = 0; i < 200 && master && alive(master); i++) {
        await sleep(50);
    }
}


// ---------------------------------------------------------------- stats

const faults = [];          // { type, t0, t1 }
const RANK = { 'reload gateway': 1, 'reload endpoint': 2, 'worker kill': 3,
               'endpoint restart': 4 };
const outcomes = new Map(); // "front kind" -> Map(result -> n)
const windows = new Map();  // window -> Map(result -> n)
const lostList = [];        // the first few lost replies, for the summary
const violations = { 'wrong id': 0, 'cross-session': 0, duplicated: 0,
                     'null id': 0 };
const examples = [];
const counters = new Map(); // free-form counts

function bump(map, key, by = 1) {
    map.set(key, (map.get(key) || 0) + by);
}

function count(key, by = 1) {
    bump(counters, key, by);
}

// an outcome is in a fault's window when it overlaps from 1 s before the
// fault to 3 s after it; after a restart, 13 s: nginx's fail_timeout (10 s)
// keeps the gateway's upstream servers marked failed that long
function windowOf(t0, t1) {
    let best = 'quiet';
    for (const f of faults) {
        const after = f.type === 'endpoint restart' ? 13 : 3;
        if (t1 >= f.t0 - 1 && t0 <= f.t1 + after
            && (best === 'quiet' || RANK[f.type] > RANK[best]))
        {
            best = f.type;
        }
    }
    return best;
}

const LOST = /^(reset|timeout|cut|lost)/;
const gw502 = new Map();    // the gateway's 502s by the endpoint fault before

// the endpoint's last fault before t and how long before
function after502(t) {
    let last = null;
    for (const f of faults) {
        if (f.type !== 'reload gateway' && f.t0 <= t) {
            last = f;
        }
    }
    if (!last) {
        return 'no endpoint fault before';
    }
    const d = t - (last.t1 === Infinity ? t : last.t1);
    return `${last.type} +${d <= 3 ? '0-3' : d <= 13 ? '3-13' : 'over 13'} s`;
}

function record(front, kind, result, t0, detail) {
    const t1 = now();
    const key = `${front} ${kind}`;
    if (!outcomes.has(key)) {
        outcomes.set(key, new Map());
    }
    bump(outcomes.get(key), result);
    const w = windowOf(t0, t1);
    const wk = `${front} ${w}`;
    if (!windows.has(wk)) {
        windows.set(wk, new Map());
    }
    bump(windows.get(wk), result);
    if (front === 'gateway' && result.startsWith('http 502')) {
        // by kind too: a retry-safe kind's 502 at a reload is a fault of
        // the gateway's retry, an unsafe call's is by design (issue 44)
        bump(gw502, `${after502(t0)}: ${kind}`);
    }
    if (LOST.test(result) && !kind.startsWith('GET')) {
        bump(counters, `lost: ${result} (${w})`);
        if (lostList.length < 20 && w !== 'endpoint restart') {
            lostList.push(`${t0.toFixed(1)}-${t1.toFixed(1)} s ${key}: `
                          + `${result}${detail ? ' ' + detail : ''} [${w}]`);
        }
    }
}

function violation(what, detail) {
    violations[what]++;
    if (examples.length < 20) {
        examples.push(`${now().toFixed(1)} s ${what}: ${detail}`);
    }
}


// ---------------------------------------------------------------- HTTP

function parseSse(state, chunk, onEvent) {
    state.buf += chunk.replace(/\r\n/g, '\n');
    let i;
    while ((i = state.buf.indexOf('\n\n')) >= 0) {
        const block = state.buf.slice(0, i);
        state.buf = state.buf.slice(i + 2);
        const ev = { id: null, data: null };
        for (const line of block.split('\n')) {
            if (line.startsWith(':')) {
                continue;
            }
            const c = line.indexOf(':');
            const f = c < 0 ? line : line.slice(0, c);
            let v = c < 0 ? '' : line.slice(c + 1);
            if (v.startsWith(' ')) {
                v = v.slice(1);
            }
            if (f === 'id') {
                ev.id = v;
            } else if (f === 'data') {
                ev.data = ev.data === null ? v : ev.data + '\n' + v;
            }
        }
        if (ev.id === null && ev.data === null) {
            continue;
        }
        let m = null;
        if (ev.data) {
            try {
                m = JSON.parse(ev.data);
            } catch (e) {
                m = { unparsable: ev.data };
            }
        }
        onEvent(ev, m);
    }
}

// One HTTP exchange: { status, headers, sse, msgs, lastId, cut, err,
// timedOut, reused, bytes }.  opt.onEvent(ev, msg, res) for each SSE event
// (and each JSON message); opt.ctl.abort() ends it from outside.
function exchange(port, opt) {
    return new Promise((resolve) => {
        const res = { status: 0, headers: {}, sse: false, msgs: [],
                      lastId: null, cut: false, err: null, timedOut: false,
                      reused: false, bytes: 0, aborted: false };
        let done = false;
        let timer = null;
        const finish = () => {
            if (!done) {
                done = true;
                clearTimeout(timer);
                resolve(res);
            }
        };
        const deliver = (ev, m) => {
            if (ev.id !== null) {
                res.lastId = ev.id;
            }
            if (m) {
                res.msgs.push(m);
            }
            if (opt.onEvent) {
                opt.onEvent(ev, m, res);
            }
        };
        const req = http.request({
            host: '127.0.0.1', port, path: opt.path || '/mcp',
            method: opt.method || 'POST', headers: opt.headers,
            agent: opt.agent === undefined ? false : opt.agent,
        }, (r) => {
            res.status = r.statusCode;
            res.headers = r.headers;
            res.sse = /text\/event-stream/.test(r.headers['content-type'] || '');
            if (opt.onHeaders) {
                opt.onHeaders(res);
            }
            const st = { buf: '' };
            let body = '';
            r.setEncoding('utf8');
            r.on('data', (chunk) => {
                res.bytes += chunk.length;
                if (res.sse) {
                    parseSse(st, chunk, deliver);
                } else {
                    body += chunk;
                }
            });
            r.on('end', () => {
                if (!res.sse && body) {
                    let m;
                    try {
                        m = JSON.parse(body);
                    } catch (e) {
                        m = null;
                    }
                    for (const x of Array.isArray(m) ? m : m ? [m] : []) {
                        deliver({ id: null }, x);
                    }
                    res.body = body;
                }
                finish();
            });
            r.on('error', (e) => {
                res.cut = true;
                res.err = res.err || e.code || e.message;
                finish();
            });
            r.on('close', () => {
                if (!r.complete) {
                    res.cut = true;
                    res.err = res.err || 'closed';
                }
                finish();
            });
        });
        req.on('error', (e) => {
            res.cut = true;
            res.err = e.code || e.message;
            res.reused = !!req.reusedSocket;
            finish();
        });
        if (opt.ctl) {
            opt.ctl.abort = () => {
                res.aborted = true;
                req.destroy();
                finish();
            };
        }
        timer = setTimeout(() => {
            res.timedOut = true;
            req.destroy();
            finish();
        }, opt.timeout || TIMEOUT);
        req.end(opt.body);
    });
}

// exchange(), sent again once on a new connection when a reused keep-alive
// connection failed before any byte of a reply
async function send(c, opt) {
    let res = await exchange(c.port, { agent: c.agent, ...opt });
    if (res.cut && res.status === 0 && res.bytes === 0 && res.reused) {
        count(`${c.front}: sent again after a reused connection failed`);
        res = await exchange(c.port, { ...opt, agent: false });
    }
    return res;
}

function headers25(s, extra) {
    const h = { 'Content-Type': 'application/json',
                Accept: 'application/json, text/event-stream',
                'MCP-Protocol-Version': '2025-11-25', ...extra };
    if (s && s.sid) {
        h['Mcp-Session-Id'] = s.sid;
    }
    return h;
}

function isReply(m) {
    return m && typeof m === 'object' && !Array.isArray(m)
        && ('result' in m || 'error' in m) && !('method' in m);
}

// the replies among msgs: checked against id; returns the one for id
function checkReplies(c, s, msgs, id) {
    let mine = null;
    const ns = s ? s.ns : c.ns;
    for (const m of msgs) {
        if (!isReply(m)) {
            continue;
        }
        if (m.id === null || m.id === undefined) {
            if (id !== undefined) {
                violation('null id', JSON.stringify(m).slice(0, 200));
            }
            continue;
        }
        if (m.id === id) {
            const seen = s ? s.replied : c.replied;
            if (seen.has(id)) {
                violation('duplicated', `${c.front} ${id}`);
            } else {
                seen.add(id);
                if (seen.size > 10000) {
                    seen.clear();
                }
            }
            mine = m;
        } else if (typeof m.id === 'string'
                   && m.id.startsWith(ns + '.'))
        {
            violation('wrong id', `${c.front} sent ${id}, got ${m.id}`);
        } else {
            violation('cross-session', `${c.front} sent ${id}, got ${m.id}`);
        }
    }
    return mine;
}

function resultOf(reply) {
    if (reply.error) {
        return `rpc-error ${reply.error.code}`;
    }
    return reply.result && reply.result.isError ? 'tool-error' : 'ok';
}


// ---------------------------------------------------------------- clients

let front = {};             // name -> { port, nginx }
const triggers = [];        // times of update_watched_resource that succeeded

// answer a sampling request on a connection of its own
async function answerSampling(c, s, m) {
    const t0 = now();
    const body = JSON.stringify({
        jsonrpc: '2.0', id: m.id,
        result: { role: 'assistant', model: 'soak', stopReason: 'endTurn',
                  content: { type: 'text', text: 'soak answer' } },
    });
    const res = await exchange(c.port, { headers: headers25(s), body,
                                         agent: false });
    record(c.front, 'sampling answer',
           res.status === 202 ? 'ok'
           : res.status === 404 ? 'session gone'
           : res.status ? `http ${res.status}` : `reset ${res.err}`, t0);
}

// A request in the session s (null: stateless, 2026-07-28).  Resumes a
// cut POST stream; records the outcome as kind; returns the reply.
async function rpc(c, s, kind, method, params, hdrs) {
    const seq = ++c.n;
    const id = `${s ? s.ns : c.ns}.${seq}`;
    const t0 = now();
    const onEvent = (ev, m) => {
        if (m && m.method === 'sampling/createMessage' && m.id !== undefined) {
            if (s.samplingSeen.has(m.id)) {
                violation('duplicated',
                          `${c.front} sampling request ${m.id} again`);
                return;
            }
            s.samplingSeen.add(m.id);
            answerSampling(c, s, m);
        }
    };
    const body = JSON.stringify({ jsonrpc: '2.0', id, method, params });
    const res = await send(c, { headers: s ? headers25(s, hdrs) : hdrs,
                                body, onEvent });
    let reply = checkReplies(c, s, res.msgs, id);
    let resumed = false;

    if (!reply && s && res.status === 200 && res.sse && !res.timedOut
        && res.lastId !== null)
    {
        // the stream ended or was cut before its reply: resume it
        resumed = true;
        let last = res.lastId;
        const until = Date.now() + RESUME_WAIT;
        while (!reply && Date.now() < until) {
            const g = await exchange(c.port, {
                method: 'GET', timeout: until - Date.now(),
                headers: headers25(s, { Accept: 'text/event-stream',
                                        'Last-Event-ID': last }),
                onEvent,
            });
            reply = checkReplies(c, s, g.msgs, id);
            if (g.lastId !== null) {
                last = g.lastId;
            }
            if (g.status === 404) {
                s.gone = true;
                record(c.front, kind, 'session gone', t0);
                return null;
            }
            if (!reply && Date.now() < until) {
                await sleep(200);
            }
        }
        count(`${c.front}: POST streams resumed`);
    }

    let result;
    if (res.status === 404 && s) {
        s.gone = true;
        result = 'session gone';
    } else if (reply) {
        result = (resumed ? 'resumed, ' : '') + resultOf(reply);
        if (res.status >= 400) {
            result = `http ${res.status} ${result}`;
        }
    } else if (res.status >= 300) {
        result = `http ${res.status}`;
    } else if (resumed) {
        result = 'lost after resume';
    } else if (res.timedOut) {
        result = 'timeout';
    } else if (res.cut) {
        result = res.bytes ? `cut ${res.err}` : `reset ${res.err}`;
    } else {
        result = `no reply (http ${res.status})`;
        count(`${c.front}: no reply (http ${res.status}) `
              + (res.body || '').slice(0, 80));
    }
    record(c.front, kind, result, t0, id);
    if (res.err === 'ECONNREFUSED') {
        await sleep(250);           /* nginx is restarting */
    }
    return reply;
}

// the session's GET stream, resumed with Last-Event-ID until the session
// ends
async function getLoop(c, s) {
    let first = true;
    while (!s.closing && !s.gone) {
        const t0 = now();
        const h = headers25(s, { Accept: 'text/event-stream' });
        delete h['Content-Type'];
        if (s.lastGetId !== null) {
            h['Last-Event-ID'] = s.lastGetId;
        }
        s.ctl = {};
        const res = await exchange(c.port, {
            method: 'GET', headers: h, timeout: 3600 * 1000, ctl: s.ctl,
            onHeaders: (r) => {
                if (r.status === 200 && s.getOpen === null) {
                    s.getOpen = now();
                }
                record(c.front, first ? 'GET stream' : 'GET resume',
                       r.status === 200 ? 'ok'
                       : r.status === 404 ? 'session gone'
                       : `http ${r.status}`, t0);
            },
            onEvent: (ev, m, r) => {
                if (ev.id !== null && ev.data) {
                    /* a priming or final event (no data) repeats an id */
                    if (s.getIds.has(ev.id)) {
                        violation('duplicated',
                                  `${c.front} GET event ${ev.id} again`);
                    }
                    s.getIds.add(ev.id);
                }
                if (ev.id !== null) {
                    s.lastGetId = ev.id;
                }
                if (m && m.method === 'notifications/resources/updated') {
                    s.notes++;
                }
                if (isReply(m) && r.sse) {
                    /* replies go on their POST's stream, not here (an
                       error body of a refused GET is no event) */
                    if (typeof m.id === 'string' && m.id.startsWith(s.ns + '.')) {
                        count(`${c.front}: replies on a GET stream`);
                    } else {
                        violation('cross-session',
                                  `${c.front} GET stream got ${m.id}`);
                    }
                }
            },
        });
        first = false;
        if (res.status === 0 && !res.aborted) {
            record(c.front, 'GET resume', `reset ${res.err}`, t0);
        }
        if (res.status === 404) {
            s.gone = true;
            break;
        }
        if (s.closing) {
            break;
        }
        count(`${c.front}: GET streams ended: `
              + (res.aborted ? 'closed by the client'
                 : res.cut ? 'cut' : res.status === 200 ? 'ended by the server'
                 : `http ${res.status}`));
        if (res.status !== 200) {
            await sleep(500);
        }
    }
    s.getDone = true;
}

async function newSession(c, watch = true) {
    const s = { ns: `${c.i}.${++c.sessions}`, sid: null, rounds: 0,
                closed: now(),
                end: now() + SESSION_S * (0.8 + 0.4 * Math.random()),
                replied: new Set(), samplingSeen: new Set(), getIds: new Set(),
                lastGetId: null, getOpen: null, notes: 0, gone: false,
                closing: false, ctl: null, loop: null };
    const t0 = now();
    const id = `${s.ns}.0`;
    const res = await send(c, {
        headers: headers25(null),
        body: JSON.stringify({ jsonrpc: '2.0', id, method: 'initialize',
            params: { protocolVersion: '2025-11-25',
                      capabilities: { sampling: {} },
                      clientInfo: { name: `soak${c.i}`, version: '1' } } }),
    });
    const reply = checkReplies(c, s, res.msgs, id);
    s.sid = res.headers['mcp-session-id'] || null;
    record(c.front, 'initialize',
           reply && s.sid ? resultOf(reply)
           : res.status ? `http ${res.status}`
           : res.timedOut ? 'timeout' : `reset ${res.err}`, t0);
    if (!reply || !s.sid) {
        return null;
    }
    const t1 = now();
    const n = await send(c, { headers: headers25(s), body: JSON.stringify(
        { jsonrpc: '2.0', method: 'notifications/initialized' }) });
    record(c.front, 'initialized',
           n.status === 202 ? 'ok' : n.status ? `http ${n.status}`
           : `reset ${n.err}`, t1);
    if (watch) {
        s.subscribed = now();
        await rpc(c, s, 'subscribe', 'resources/subscribe',
                  { uri: 'test://watched-resource' });
        s.loop = getLoop(c, s);
    }
    return s;
}

// the triggers each session must have seen: those that succeeded while
// its GET stream was there (from a second after it opened to 3 s before
// the check)
function checkNotes(c, s) {
    if (s.getOpen === null || s.gone) {
        return;
    }
    const t = now();
    const due = triggers.filter((x) => x > s.getOpen + 1 && x < t - 3).length;
    const most = triggers.filter((x) => x > s.subscribed - 1).length;
    count('sessions checked for notifications');
    count('notifications due (at least)', due);
    count('notifications received', s.notes);
    if (s.notes < due) {
        count(`${c.front}: notifications missing`, due - s.notes);
        examples.length < 20 && examples.push(
            `${t.toFixed(1)} s ${c.front} session ${s.ns}: ${s.notes} `
            + `notifications, ${due} due`);
    }
    if (s.notes > most) {
        violation('duplicated', `${c.front} session ${s.ns}: ${s.notes} `
                  + `notifications, at most ${most} sent`);
    }
}

async function endSession(c, s) {
    checkNotes(c, s);
    s.closing = true;
    if (s.ctl && s.ctl.abort) {
        s.ctl.abort();
    }
    await s.loop;
    if (s.gone) {
        return;
    }
    const t0 = now();
    const res = await send(c, { method: 'DELETE', headers: headers25(s) });
    record(c.front, 'DELETE',
           res.status === 200 || res.status === 204 ? 'ok'
           : res.status === 404 ? 'session gone'
           : res.status ? `http ${res.status}` : `reset ${res.err}`, t0);
}

const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28',
               'io.modelcontextprotocol/clientCapabilities': {} };

function headers26(method, name) {
    const h = { 'Content-Type': 'application/json',
                Accept: 'application/json, text/event-stream',
                'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': method };
    if (name) {
        h['Mcp-Name'] = name;
    }
    return h;
}

async function round(c, s) {
    const steps = [
        [s, 'tools/list', 'tools/list', {}],
        [s, 'call JSON', 'tools/call',
         { name: 'test_simple_text', arguments: {} }],
        [s, 'call SSE', 'tools/call',
         { name: 'test_tool_with_logging', arguments: {} }],
        [s, 'sampling call', 'tools/call',
         { name: 'test_sampling', arguments: { prompt: 'soak' } }],
        [null, 'stateless call', 'tools/call',
         { name: 'test_simple_text', arguments: {}, _meta: META },
         headers26('tools/call', 'test_simple_text')],
        [null, 'stateless list', 'tools/list', { _meta: META },
         headers26('tools/list')],
    ];
    for (const [ss, kind, method, params, h] of steps) {
        if (s.gone) {
            return;
        }
        await rpc(c, ss, kind, method, params, h);
    }
    s.rounds++;
    if (now() - s.closed >= 15 && s.ctl && s.ctl.abort) {
        s.closed = now();
        s.ctl.abort();   /* the client closes its GET stream; it resumes */
    }
}

async function client(i) {
    const name = i % 2 ? 'gateway' : 'direct';
    const c = { i, front: name, port: front[name].port, n: 0, sessions: 0,
                ns: `${i}.x`, replied: new Set(),
                agent: new http.Agent({ keepAlive: true, maxSockets: 2 }) };
    let s = null;
    await sleep(i * 100);
    while (running) {
        if (!s) {
            s = await newSession(c);
            if (!s) {
                await sleep(500);
                continue;
            }
        }
        await round(c, s);
        if (s.gone || now() >= s.end || !running) {
            if (s.gone) {
                s.closing = true;
                s.ctl && s.ctl.abort && s.ctl.abort();
                await s.loop;
            } else {
                await endSession(c, s);
            }
            s = null;
        }
        if (PAUSE_MS) {
            await sleep(PAUSE_MS);
        }
    }
    c.agent.destroy();
}

// update_watched_resource every TRIGGER_S, in a session of its own
async function trigger() {
    const c = { i: 'trigger', front: 'direct', port: front.direct.port, n: 0,
                sessions: 0, ns: 'trigger.x', replied: new Set(),
                agent: new http.Agent({ keepAlive: true, maxSockets: 1 }) };
    let s = null;
    while (running) {
        await sleep(TRIGGER_S * 1000);
        if (!s || s.gone) {
            s = await newSession(c, false);
            if (!s) {
                continue;
            }
            s.closing = true;       /* it neither subscribes nor listens */
        }
        const r = await rpc(c, s, 'trigger', 'tools/call',
                            { name: 'update_watched_resource', arguments: {} });
        if (r && r.result) {
            triggers.push(now());
        }
    }
    if (s && !s.gone) {
        await endSession(c, s);
    }
    c.agent.destroy();
}


// ---------------------------------------------------------------- faults

const half = { opened: 0, closed: new Map() };

function halfSent(name, n) {
    const open = () => {
        if (!running) {
            return;
        }
        const sock = net.connect(front[name].port, '127.0.0.1');
        let first = '';
        half.opened++;
        sock.on('connect', () => sock.write(
            'POST /mcp HTTP/1.1\r\nHost: localhost\r\n'
            + 'Content-Type: application/json\r\n'
            + 'Accept: application/json, text/event-stream\r\n'
            + 'MCP-Protocol-Version: 2025-11-25\r\n'
            + 'Content-Length: 200\r\n\r\n{"jsonrpc":"2.0","id":'));
        sock.on('data', (d) => {
            first = first || d.toString('latin1').split('\r\n')[0];
        });
        sock.on('error', () => {});
        sock.on('close', () => {
            if (running) {
                bump(half.closed, `${name}: ${first || 'closed, no reply'}`);
                setTimeout(open, 1000);
            }
        });
        halfSockets.add(sock);
    };
    for (let k = 0; k < n; k++) {
        setTimeout(open, k * 10);
    }
}

const halfSockets = new Set();

function fault(type, t0) {
    const f = { type, t0, t1: now() };
    faults.push(f);
    return f;
}

async function faultLoop() {
    let nextReload = RELOAD_S;
    let nextKill = KILL_S;
    let restarted = RESTART_AT <= 0;
    const gap = RELOAD_S / 2;
    let gwNext = RELOAD_S + gap;
    while (running) {
        await sleep(200);
        const t = now();
        if (t > DURATION - 5) {
            continue;
        }
        if (!restarted && t >= RESTART_AT) {
            restarted = true;
            log('endpoint restart (nginx -s stop, then start)');
            const f = fault('endpoint restart', t);
            f.t1 = Infinity;
            await stopNginx(front.direct.nginx, 'stop');
            try {
                await startNginx(front.direct.nginx);
            } catch (e) {
                log(e.message);
            }
            f.t1 = now();
            continue;
        }
        if (t >= nextReload) {
            nextReload += RELOAD_S;
            nginxRun(front.direct.nginx, ['-s', 'reload']);
            fault('reload endpoint', t);
        }
        if (t >= gwNext) {
            gwNext += RELOAD_S;
            nginxRun(front.gateway.nginx, ['-s', 'reload']);
            fault('reload gateway', t);
        }
        if (t >= nextKill) {
            nextKill += KILL_S;
            const w = workers(front.direct.nginx).filter((x) => !x.old);
            if (w.length) {
                const v = w[Math.floor(Math.random() * w.length)];
                try {
                    process.kill(v.pid, 'SIGKILL');
                    log(`endpoint worker ${v.pid} killed (SIGKILL)`);
                    fault('worker kill', t);
                } catch (e) {
                    log(`kill ${v.pid}: ${e.message}`);
                }
            }
        }
    }
}


// ---------------------------------------------------------------- samples

const samples = [];

async function metrics(port) {
    const out = {};
    await new Promise((resolve) => {
        const req = http.get({ host: '127.0.0.1', port, path: '/metrics',
                               agent: false, timeout: 5000 }, (r) => {
            let b = '';
            r.setEncoding('utf8');
            r.on('data', (d) => { b += d; });
            r.on('end', () => {
                for (const line of b.split('\n')) {
                    const m = line.match(
                        /^(mcp_[a-z_]+)\{zone="[^"]*"\} (\d+(?:\.\d+)?)$/);
                    if (m) {
                        out[m[1]] = (out[m[1]] || 0) + Number(m[2]);
                    }
                }
                resolve();
            });
            r.on('error', resolve);
        });
        req.on('error', resolve);
        req.on('timeout', () => { req.destroy(); resolve(); });
    });
    return out;
}

async function sample() {
    const ep = await metrics(front.direct.port);
    const gw = await metrics(front.gateway.port);
    const we = workers(front.direct.nginx);
    const wg = workers(front.gateway.nginx);
    const cur = (w) => w.filter((x) => !x.old);
    const rss = (w) => cur(w).reduce((a, x) => a + x.rss, 0);
    samples.push({
        t: now(), epRss: rss(we), epN: cur(we).length,
        epOld: we.length - cur(we).length, gwRss: rss(wg),
        gwOld: wg.length - cur(wg).length, ep, gw,
    });
}

// at 0 s, then at 7 s past every SAMPLE_S: not at the moment of a reload
// or a kill (multiples of 15 s), when the old workers may not yet say that
// they are shutting down
async function sampleLoop() {
    await sample();
    let next = 7;
    while (running) {
        await sleep(Math.max(0, next - now()) * 1000);
        if (running) {
            await sample();
        }
        next += SAMPLE_S;
    }
}


// ---------------------------------------------------------------- summary

function logLevels(n) {
    const levels = new Map();
    const top = new Map();
    let crashes = 0;
    let killed = 0;
    let text = '';
    try {
        text = fs.readFileSync(path.join(n.dir, 'logs/error.log'), 'utf8');
    } catch (e) {
        /* none */
    }
    for (const line of text.split('\n')) {
        const m = line.match(/^\S+ \S+ \[(\w+)\] \d+#\d+: (.*)$/);
        if (!m) {
            continue;
        }
        bump(levels, m[1]);
        const sig = m[2].match(/exited on signal (\d+)/);
        if (sig) {
            sig[1] === '9' ? killed++ : crashes++;
        }
        if (!/^(debug|info|notice)$/.test(m[1])) {
            const msg = m[2].replace(/^\*\d+ /, '')
                .replace(/, client: .*$/, '')
                .replace(/correlation id \S+/, 'correlation id X')
                .replace(/\d+/g, 'N');
            bump(top, `[${m[1]}] ${msg}`);
        }
    }
    return { levels, top, crashes, killed };
}

function fmtMap(m) {
    return [...m].sort((a, b) => b[1] - a[1])
        .map(([k, v]) => `${v} ${k}`).join(', ');
}

function summary(elapsed) {
    const L = [];
    const nv = spawnSync(NGINX, ['-v'], { encoding: 'utf8' }).stderr.trim();
    const kinds = (t) => faults.filter((f) => f.type === t).length;
    L.push(`soak: ${(elapsed / 60).toFixed(1)} min, ${CLIENTS} clients `
           + `(${Math.ceil(CLIENTS / 2)} direct, ${Math.floor(CLIENTS / 2)} `
           + `through the gateway), ${nv.replace(/^.*: /, '')}, endpoint `
           + `${WORKERS} workers, gateway 2, ${os.cpus().length} cores`);
    L.push(`faults: ${kinds('reload endpoint')} endpoint reloads, `
           + `${kinds('reload gateway')} gateway reloads, `
           + `${kinds('worker kill')} endpoint workers SIGKILLed, `
           + `${kinds('endpoint restart')} endpoint restart; ${HALF_SENT} `
           + `half-sent requests held (${half.opened} opened in all; closed `
           + `by the server: ${fmtMap(half.closed) || 'none'})`);

    let total = 0;
    let good = 0;
    for (const m of outcomes.values()) {
        for (const [k, v] of m) {
            total += v;
            if (/(^|, )(ok|tool-error)$/.test(k) && !/^http/.test(k)) {
                good += v;
            }
        }
    }
    L.push('', `outcomes: ${total}, ${good} successful`);
    for (const key of [...outcomes.keys()].sort()) {
        L.push(`  ${key.padEnd(24)} ${fmtMap(outcomes.get(key))}`);
    }
    L.push('', 'by fault window (an outcome is in a window when it overlaps '
           + '1 s before to 3 s after the fault, 13 s after a restart):');
    for (const f of ['direct', 'gateway']) {
        for (const w of ['quiet', 'reload endpoint', 'reload gateway',
                         'worker kill', 'endpoint restart'])
        {
            const wk = `${f} ${w}`;
            if (windows.has(wk)) {
                L.push(`  ${wk.padEnd(24)} ${fmtMap(windows.get(wk))}`);
            }
        }
    }

    let lost = 0;
    for (const [k, v] of counters) {
        if (k.startsWith('lost: ')) {
            lost += v;
        }
    }
    L.push('', `replies lost: ${lost}; wrong id: ${violations['wrong id']}; `
           + `cross-session: ${violations['cross-session']}; duplicated: `
           + `${violations.duplicated}; error replies with a null id: `
           + `${violations['null id']}`);
    const sum = (re) => [...counters].filter(([k]) => re.test(k))
        .reduce((a, [, v]) => a + v, 0);
    const okOf = (kind) => ['direct', 'gateway'].reduce((a, f) =>
        a + ((outcomes.get(`${f} ${kind}`) || new Map()).get('ok') || 0), 0);
    L.push(`gateway 502s by the endpoint fault before them: `
           + `${fmtMap(gw502) || 'none'}`);
    L.push(`GET streams: ${okOf('GET stream')} opened, ${okOf('GET resume')} `
           + `resumed with Last-Event-ID; notifications/resources/updated: `
           + `${counters.get('notifications received') || 0} received by `
           + `${counters.get('sessions checked for notifications') || 0} `
           + `sessions, at least ${counters.get('notifications due (at least)') || 0} `
           + `due, ${sum(/notifications missing/)} missing`);
    for (const [k, v] of [...counters].sort()) {
        L.push(`  ${k}: ${v}`);
    }
    if (lostList.length) {
        L.push('  the first lost replies outside the restart window:',
               ...lostList.map((x) => `    ${x}`));
    }
    if (examples.length) {
        L.push('  first findings:', ...examples.map((x) => `    ${x}`));
    }

    L.push('', 'over time (RSS: the current workers, kB; old: workers '
           + 'still shutting down; zone and events: kB):');
    L.push('     s  ep RSS  old  gw RSS  old  sessions  streams  pending  '
           + 'events  ep zone  gw sess  gw zone');
    const every = Math.max(1, Math.round(DURATION / 20 / SAMPLE_S));
    samples.forEach((x, k) => {
        if (k % every && k !== samples.length - 1) {
            return;
        }
        const kb = (v) => (v === undefined ? '-' : Math.round(v / 1024));
        L.push(`  ${x.t.toFixed(0).padStart(4)}  ${String(x.epRss).padStart(6)}`
               + `  ${String(x.epOld).padStart(3)}  ${String(x.gwRss).padStart(6)}`
               + `  ${String(x.gwOld).padStart(3)}`
               + `  ${String(x.ep.mcp_sessions ?? '-').padStart(8)}`
               + `  ${String(x.ep.mcp_streams_open ?? '-').padStart(7)}`
               + `  ${String(x.ep.mcp_server_requests_pending ?? '-').padStart(7)}`
               + `  ${String(kb(x.ep.mcp_session_events_bytes)).padStart(6)}`
               + `  ${String(kb(x.ep.mcp_zone_used_bytes)).padStart(7)}`
               + `  ${String(x.gw.mcp_sessions ?? '-').padStart(7)}`
               + `  ${String(kb(x.gw.mcp_zone_used_bytes)).padStart(7)}`);
    });

    L.push('', 'error.log lines by level:');
    for (const n of [front.direct.nginx, front.gateway.nginx]) {
        const r = logLevels(n);
        L.push(`  ${n.name}: ${fmtMap(r.levels) || 'none'}; workers exited `
               + `on SIGKILL: ${r.killed}, on another signal (a crash): `
               + `${r.crashes}`);
        [...r.top].sort((a, b) => b[1] - a[1]).slice(0, 8)
            .forEach(([k, v]) => L.push(`    ${v} ${k.slice(0, 150)}`));
    }
    return L.join('\n');
}


// ---------------------------------------------------------------- main

async function main() {
    const epPort = await freePort();
    const gwPort = await freePort();
    const mk = (name, port, conf) => {
        const dir = path.join(prefix, name);
        for (const d of ['conf', 'logs', 'tmp']) {
            fs.mkdirSync(path.join(dir, d), { recursive: true });
        }
        fs.writeFileSync(path.join(dir, 'conf/nginx.conf'), conf);
        return { name, dir, port };
    };
    const ep = mk('endpoint', epPort, endpointConf(epPort));
    const gw = mk('gateway', gwPort, gatewayConf(gwPort, epPort));
    front = { direct: { port: epPort, nginx: ep },
              gateway: { port: gwPort, nginx: gw } };

    const cleanup = () => {
        for (const n of [ep, gw]) {
            const p = masterPid(n);
            if (p && alive(p)) {
                try {
                    process.kill(p, 'SIGTERM');
                } catch (e) {
                    /* gone */
                }
            }
        }
    };
    process.on('SIGINT', () => { cleanup(); process.exit(130); });
    process.on('SIGTERM', () => { cleanup(); process.exit(143); });

    await startNginx(ep);
    await startNginx(gw);
    log(`${DURATION} s, ${CLIENTS} clients, endpoint :${epPort}, gateway `
        + `:${gwPort}, in ${prefix}`);

    halfSent('direct', Math.ceil(HALF_SENT / 2));
    halfSent('gateway', Math.floor(HALF_SENT / 2));
    const tasks = [faultLoop(), sampleLoop(), trigger()];
    for (let i = 0; i < CLIENTS; i++) {
        tasks.push(client(i));
    }
    const progress = setInterval(() => {
        let n = 0;
        for (const m of outcomes.values()) {
            for (const v of m.values()) {
                n += v;
            }
        }
        let lost = 0;
        for (const [k, v] of counters) {
            lost += k.startsWith('lost: ') ? v : 0;
        }
        log(`${n} outcomes, ${lost} lost, `
            + `${Object.values(violations).reduce((a, b) => a + b)} `
            + 'wrong, crossed or duplicated');
    }, 60000);

    await sleep(DURATION * 1000);
    running = false;
    const elapsed = now();
    log('time is up: the clients end their sessions');
    for (const s of halfSockets) {
        s.destroy();
    }
    await Promise.race([Promise.all(tasks), sleep(TIMEOUT + 15000)]);
    clearInterval(progress);
    await sleep(2000);
    await sample();

    const text = summary(elapsed);
    fs.writeFileSync(path.join(prefix, 'summary.txt'), text + '\n');
    process.stdout.write(text + '\n');

    await stopNginx(gw, 'quit');
    await stopNginx(ep, 'quit');
    cleanup();
    if (env.SOAK_KEEP === '1') {
        log(`logs and summary kept in ${prefix}`);
    } else {
        fs.rmSync(prefix, { recursive: true, force: true });
    }
    process.exit(0);
}

main().catch((e) => {
    console.error(`soak: ${e.stack || e}`);
    process.exit(1);
});
