// scripts/stdio-churn's driver (issue 40): see that script's header and
// docs/testing.md ("The stdio churn").  Settings (environment):
//
//   CHURN_SESSIONS=10000  sessions opened and ended
//   CHURN_WORKERS=4       worker_processes (more than one: reuseport)
//   CHURN_CLIENTS=8       sessions at once
//   CHURN_POOL=64         mcp_stdio_pool size= and total= (children)
//   CHURN_TIMEOUT=3       the session zone's idle timeout, s (expiry)
//   CHURN_STDIO_TIMEOUT=2 mcp_stdio_timeout, s (the owner's look)
//   CHURN_KEEP=3          sessions kept live (GET stream) at the end
//   CHURN_DIR             where nginx runs (default a new /tmp dir)
//   CHURN_NGINX_PRELOAD   LD_PRELOAD for nginx alone (libasan.so, with an
//                         MCP_SANITIZE=1 module: leaks in error.log)
//   MCP_MODULE, MCP_NODE  set by scripts/stdio-churn
//
// The stdio server is a tiny Node MCP server this file writes
// (initialize, tools/list, tools/call echo and slow, ping): the cost of
// a child is a Node start.  Each session: initialize, initialized, a
// tools/call echo (and a tools/list for one in two); then by turns a
// DELETE, nothing (abandoned: the connection closes, the session
// expires), or a tools/call slow closed by the client after 100 ms (then
// left to expire).  A request refused at initialize (over the pool's
// bounds) is retried and counted.  A session that fails after a reload or
// quit it began before is counted as cut, not as an error.
//
// Every request is on a fresh connection (no keep-alive agent) and, with
// more than one worker, the listen has reuseport, so that the kernel
// spreads a session's requests over the workers: each response names its
// worker (X-Worker: $pid), and the requests answered by a worker other
// than the one that answered the session's initialize (the owner of its
// child) are counted, so that the run shows the cross-worker path taken.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';

const env = process.env;
const N = +(env.CHURN_SESSIONS || 10000);
const W = +(env.CHURN_WORKERS || 4);
const C = +(env.CHURN_CLIENTS || 8);
const POOL = +(env.CHURN_POOL || 64);
const TMO = +(env.CHURN_TIMEOUT || 3);
const STMO = +(env.CHURN_STDIO_TIMEOUT || 2);
const KEEP = +(env.CHURN_KEEP || 3);
const NGINX = env.CHURN_NGINX || '/usr/sbin/nginx';
const MODULE = env.MCP_MODULE;
const NODE = env.MCP_NODE || process.execPath;
const MARK = `MCP_CHURN_MARK=${process.pid}-${Date.now()}`;
const dir = env.CHURN_DIR
    || fs.mkdtempSync(path.join(os.tmpdir(), 'stdiochurn-'));
const PV = '2025-11-25';
const t0 = Date.now();

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const secs = () => ((Date.now() - t0) / 1000).toFixed(1);
const say = (s) => console.log(`[${secs().padStart(7)}s] ${s}`);

// --- nginx ---------------------------------------------------------------

// the workers' user reads the server and finds mcp_ipc_path here
fs.chmodSync(dir, 0o755);
for (const d of ['conf', 'logs', 'tmp']) {
    fs.mkdirSync(path.join(dir, d), { recursive: true });
}
const SERVER = path.join(dir, 'server.js');
fs.writeFileSync(SERVER, `
const slow = new Map();
function send(m) { process.stdout.write(JSON.stringify(m) + '\\n'); }
require('readline').createInterface({ input: process.stdin })
.on('line', (l) => {
    let m; try { m = JSON.parse(l); } catch (e) { return; }
    if (m.method === 'notifications/cancelled') {
        const t = slow.get(m.params && m.params.requestId);
        if (t) { clearTimeout(t); slow.delete(m.params.requestId); }
        return;
    }
    if (m.id === undefined || m.method === undefined) return;
    const r = (result) => send({ jsonrpc: '2.0', id: m.id, result });
    switch (m.method) {
    case 'initialize':
        return r({ protocolVersion: m.params.protocolVersion,
                   capabilities: { tools: {} },
                   serverInfo: { name: 'churn', version: '1' } });
    case 'ping': return r({});
    case 'tools/list':
        return r({ tools: [
            { name: 'echo', inputSchema: { type: 'object' } },
            { name: 'slow', inputSchema: { type: 'object' } } ] });
    case 'tools/call':
        if (m.params.name === 'slow') {
            slow.set(m.id, setTimeout(() => {
                slow.delete(m.id);
                r({ content: [{ type: 'text', text: 'slow' }] });
            }, 2000));
            return;
        }
        return r({ content: [{ type: 'text',
                   text: JSON.stringify(m.params.arguments || {}) }] });
    default:
        send({ jsonrpc: '2.0', id: m.id,
               error: { code: -32601, message: 'no such method' } });
    }
});
`);

function freePort() {
    const r = spawnSync('perl', ['-MIO::Socket::INET', '-e',
        'print IO::Socket::INET->new(Listen => 1, LocalAddr => "127.0.0.1",'
        + ' LocalPort => 0)->sockport']);
    return +r.stdout.toString();
}
const PORT = freePort();

fs.writeFileSync(path.join(dir, 'conf/nginx.conf'), `
load_module  ${MODULE};
worker_processes  ${W};
error_log  logs/error.log  info;
pid        logs/nginx.pid;
events { worker_connections  16384; }
http {
    access_log  off;
    client_body_temp_path  tmp;
    mcp_session_zone  zone=churn:8m timeout=${TMO}s;
    server {
        # reuseport: a socket per worker, so that the kernel spreads the
        # client's connections (one per request) over all of them
        listen  127.0.0.1:${PORT}  backlog=4096${W > 1 ? '  reuseport' : ''};
        location = /mcp {
            add_header          X-Worker \$pid always;
            mcp_stdio           ${NODE} ${SERVER};
            mcp_stdio_sessions  on;
            mcp_session         churn;
            mcp_stdio_pool      size=${POOL} total=${POOL};
            mcp_stdio_timeout   ${STMO}s;
            mcp_stdio_stderr    warn;
            mcp_stdio_env       ${MARK};
        }
    }
}
`);

// the children have mcp_stdio_env's environment only: no LD_PRELOAD.
// Leak reports do not fail `nginx -s` (nginx's own never-freed memory
// is in them): the workers' go to error.log, read at the end; full
// stacks, so that they reach the module's frames.
const NGINX_ENV = env.CHURN_NGINX_PRELOAD
    ? { ...env, LD_PRELOAD: env.CHURN_NGINX_PRELOAD,
        ASAN_OPTIONS: [env.ASAN_OPTIONS, 'fast_unwind_on_malloc=0']
            .filter(Boolean).join(':'),
        LSAN_OPTIONS: [env.LSAN_OPTIONS, 'exitcode=0']
            .filter(Boolean).join(':') }
    : env;

function nginx(...args) {
    const r = spawnSync(NGINX, ['-p', dir + '/', '-c', 'conf/nginx.conf',
                                ...args], { encoding: 'utf8',
                                            env: NGINX_ENV });
    if (r.status !== 0) {
        throw new Error(`nginx ${args.join(' ')}: ${r.stderr}`);
    }
}

function masterPid() {
    try {
        return +fs.readFileSync(path.join(dir, 'logs/nginx.pid'), 'utf8');
    } catch (e) {
        return 0;
    }
}

function alive(pid) {
    try { process.kill(pid, 0); return true; } catch (e) { return false; }
}

// --- ps ------------------------------------------------------------------

function procs() {
    const out = spawnSync('ps', ['-eo', 'pid=,ppid=,stat=,rss=,args='],
                          { encoding: 'utf8' }).stdout;
    const all = [];
    for (const l of out.split('\n')) {
        const m = l.match(/^\s*(\d+)\s+(\d+)\s+(\S+)\s+(\d+)\s+(.*)$/);
        if (m) {
            all.push({ pid: +m[1], ppid: +m[2], stat: m[3], rss: +m[4],
                       args: m[5] });
        }
    }
    return all;
}

// of a process's RSS, the shared memory's (the zones, touched as they
// fill: not the worker's own memory), kB
function rssShmem(pid) {
    try {
        const m = fs.readFileSync(`/proc/${pid}/status`, 'utf8')
            .match(/^RssShmem:\s+(\d+)/m);
        return m ? +m[1] : 0;
    } catch (e) {
        return 0;
    }
}

function marked() {
    const pids = [];
    for (const e of fs.readdirSync('/proc')) {
        if (!/^\d+$/.test(e)) continue;
        let s;
        try { s = fs.readFileSync(`/proc/${e}/environ`, 'latin1'); }
        catch (x) { continue; }
        if (('\0' + s + '\0').includes('\0' + MARK + '\0')) pids.push(+e);
    }
    return pids;
}

// The counts now: all the master's workers, of this generation and of
// the one before a reload still exiting ("worker process is shutting
// down"), their children alive and zombie (under every worker pid), the
// marked processes and, of those, the ones no worker of our master is the
// parent of (orphans: a worker gone, the child reparented).  rss: the sum
// of this generation's workers' RSS.
function census() {
    const all = procs();
    const master = masterPid();
    const byPid = new Map(all.map((p) => [p.pid, p]));
    const workers = all.filter((p) => master && p.ppid === master
                               && /worker process/.test(p.args));
    const current = workers.filter((p) => !/shutting down/.test(p.args));
    const wset = new Set(workers.map((p) => p.pid));
    const kids = all.filter((p) => wset.has(p.ppid));
    const mk = marked();
    const orphans = mk.filter((pid) => {
        const p = byPid.get(pid);
        return !p || !wset.has(p.ppid);
    });
    return {
        workers: current.map((p) => ({ pid: p.pid, rss: p.rss })),
        exiting: workers.length - current.length,
        rss: current.reduce((a, p) => a + p.rss, 0),
        shm: current.reduce((a, p) => a + rssShmem(p.pid), 0),
        children: kids.filter((p) => !p.stat.startsWith('Z')).length,
        zombies: kids.filter((p) => p.stat.startsWith('Z')).length
            + all.filter((p) => p.stat.startsWith('Z')
                          && mk.includes(p.pid) && !wset.has(p.ppid)).length,
        marked: mk.length,
        orphans: orphans.length,
        orphanPids: orphans,
    };
}

const fmt = (c) => `workers ${c.workers.length}`
    + (c.exiting ? ` (+${c.exiting} exiting)` : '')
    + ` children ${c.children}`
    + ` zombies ${c.zombies} marked ${c.marked} orphans ${c.orphans}`;

// --- HTTP ----------------------------------------------------------------

function request(method, sid, body, abortAfter) {
    return new Promise((resolve) => {
        const headers = { Accept: 'application/json, text/event-stream' };
        if (body !== undefined) headers['Content-Type'] = 'application/json';
        if (sid) {
            headers['Mcp-Session-Id'] = sid;
            headers['MCP-Protocol-Version'] = PV;
        }
        const data = body === undefined ? undefined : JSON.stringify(body);
        const req = http.request({ host: '127.0.0.1', port: PORT,
                                   path: '/mcp', method, headers,
                                   agent: false, timeout: 30000 }, (res) => {
            const chunks = [];
            res.on('data', (c) => chunks.push(c));
            res.on('end', () => resolve({ status: res.statusCode,
                headers: res.headers,
                text: Buffer.concat(chunks).toString() }));
            res.on('error', (e) => resolve({ status: 0, error: e.message }));
        });
        req.on('error', (e) => resolve({ status: 0, error: e.message }));
        req.on('timeout', () => req.destroy(new Error('timeout')));
        if (abortAfter) {
            setTimeout(() => {
                req.destroy();
                resolve({ status: -1, aborted: true });
            }, abortAfter);
        }
        req.end(data);
    });
}

// the JSON-RPC message answering id in a reply (JSON or an event stream)
function answer(r, id) {
    if (!r.text) return undefined;
    const msgs = [];
    if ((r.headers['content-type'] || '').startsWith('text/event-stream')) {
        for (const l of r.text.split('\n')) {
            if (l.startsWith('data:')) {
                try { msgs.push(JSON.parse(l.slice(5))); } catch (e) { }
            }
        }
    } else {
        try { msgs.push(JSON.parse(r.text)); } catch (e) { }
    }
    return msgs.find((m) => m.id === id);
}

// --- the run -------------------------------------------------------------

const stats = {
    opened: 0, delete: 0, abandon: 0, midcall: 0, refused: 0, cut: 0,
    errors: 0,
};
// the cross-worker path: a session's requests after its initialize that
// were answered, those answered by a worker other than the owner (the
// one that answered the initialize), by kind, and the sessions with one
const xw = {
    answered: 0, other: 0, sessions: 0, byKind: {},
};
const errorSamples = [];
let lastFault = 0;         // when the last reload or quit began
let paused = null;         // a promise while nginx is down
let started = 0;
let done = 0;

function fail(born, what) {
    if (born <= lastFault) {
        stats.cut++;
    } else {
        stats.errors++;
        if (errorSamples.length < 10) errorSamples.push(what);
    }
}

async function session(i) {
    let born;
    let sid;
    let owner;
    for (let tries = 0; ; tries++) {
        while (paused) await paused;
        born = Date.now();
        const r = await request('POST', null, { jsonrpc: '2.0', id: 1,
            method: 'initialize', params: { protocolVersion: PV,
                capabilities: {}, clientInfo: { name: 'churn',
                                                version: '1' } } });
        const m = r.status === 200 ? answer(r, 1) : undefined;
        if (m && m.result && r.headers['mcp-session-id']) {
            sid = r.headers['mcp-session-id'];
            owner = r.headers['x-worker'];
            break;
        }
        if (r.status === 0 && (paused || born <= lastFault)) continue;
        if (m && m.error && tries < 100) {
            stats.refused++;
            await sleep(50);
            continue;
        }
        fail(born, `initialize: ${r.status} ${r.error || r.text}`);
        return;
    }
    stats.opened++;
    let crossed = false;
    const call = async (kind, ...args) => {
        const r = await request(...args);
        const w = r.headers && r.headers['x-worker'];
        if (w) {
            const k = xw.byKind[kind] || (xw.byKind[kind] = [0, 0]);
            xw.answered++;
            k[0]++;
            if (w !== owner) {
                xw.other++;
                k[1]++;
                if (!crossed) xw.sessions++;
                crossed = true;
            }
        }
        return r;
    };
    let r = await call('initialized', 'POST', sid, { jsonrpc: '2.0',
        method: 'notifications/initialized' });
    if (r.status !== 202) {
        return fail(born, `initialized: ${r.status} ${r.error || r.text}`);
    }
    if (i % 2) {
        r = await call('tools/list', 'POST', sid, { jsonrpc: '2.0',
                                                    id: 2,
                                                    method: 'tools/list' });
        const m = answer(r, 2);
        if (!m || !m.result) {
            return fail(born, `tools/list: ${r.status} ${r.error || r.text}`);
        }
    }
    r = await call('tools/call', 'POST', sid, { jsonrpc: '2.0', id: 3,
        method: 'tools/call', params: { name: 'echo',
                                        arguments: { i } } });
    const m = answer(r, 3);
    if (!m || !m.result
        || m.result.content[0].text !== JSON.stringify({ i })) {
        return fail(born, `tools/call: ${r.status} ${r.error || r.text}`);
    }
    switch (i % 3) {
    case 0:
        r = await call('DELETE', 'DELETE', sid);
        if (r.status !== 200 && r.status !== 204) {
            return fail(born, `DELETE: ${r.status} ${r.error || r.text}`);
        }
        stats.delete++;
        break;
    case 1:
        stats.abandon++;
        break;
    default:
        await call('slow', 'POST', sid, { jsonrpc: '2.0', id: 4,
            method: 'tools/call', params: { name: 'slow', arguments: {} } },
            100);
        stats.midcall++;
    }
}

async function runClients(from, to, onDone) {
    let next = from;
    async function one() {
        while (next < to) {
            const i = next++;
            started++;
            await session(i);
            done++;
            if (onDone) onDone(done);
        }
    }
    await Promise.all(Array.from({ length: C }, one));
}

async function waitFor(secsMax, cond) {
    const until = Date.now() + secsMax * 1000;
    for (;;) {
        const v = cond();
        if (v || Date.now() > until) return v;
        await sleep(200);
    }
}

// the old workers' exit after a reload, then the orphans
async function reload(label) {
    const before = census();
    const old = new Set(before.workers.map((w) => w.pid));
    lastFault = Date.now();
    nginx('-s', 'reload');
    const gone = await waitFor(60, () => [...old].every((p) => !alive(p)));
    await sleep(STMO * 1000 + 500);    // SIGTERM, then SIGKILL's grace
    const after = census();
    say(`${label}: reload with ${before.children} children;`
        + ` old workers (${old.size})`
        + ` ${gone ? 'exited' : 'STILL RUNNING after 60 s'};`
        + ` now ${fmt(after)}`);
    return { before, after, gone };
}

async function quitRestart(label) {
    const before = census();
    let release;
    paused = new Promise((r) => { release = r; });
    lastFault = Date.now();
    const master = masterPid();
    nginx('-s', 'quit');
    const gone = await waitFor(60, () => !alive(master));
    const atExit = marked().length;
    const orphans = await waitFor(STMO + 10, () => marked().length === 0)
        ? 0 : marked().length;
    say(`${label}: quit with ${before.children} children; master`
        + ` ${gone ? 'exited' : 'STILL RUNNING after 60 s'}; marked`
        + ` processes at its exit ${atExit}, ${STMO + 10} s later`
        + ` ${orphans} (orphans)`);
    nginx();
    await waitFor(10, () => census().workers.length >= W);
    lastFault = Date.now();
    paused = null;
    release();
    return { before, atExit, orphans, gone };
}

async function main() {
    const t = spawnSync(NODE, ['-e', `
        const { execFileSync } = require('child_process');
        const t = process.hrtime.bigint();
        for (let i = 0; i < 10; i++)
            execFileSync(process.argv[1], ['${SERVER}'], { input: '' });
        console.log(Number(process.hrtime.bigint() - t) / 1e7);
    `, NODE], { encoding: 'utf8' });
    say(`stdio churn: ${N} sessions, ${C} at once, pool ${POOL},`
        + ` zone timeout ${TMO}s, mcp_stdio_timeout ${STMO}s, in ${dir}`);
    say(`worker_processes ${W}`
        + (W > 1 ? ', listen reuseport, a connection per request: a'
                   + ' session\'s requests land on any worker, its child'
                   + ' is its owner\'s (docs/stdio.md, "Across workers")'
                 : ''));
    say(`a start of the stdio server (node): ${(+t.stdout).toFixed(0)} ms`
        + ' wall, average of 10');

    nginx();
    await waitFor(10, () => census().workers.length >= W);
    const c0 = census();
    say(`started: ${fmt(c0)}; workers' RSS ${c0.rss} kB`);

    let peak = 0;
    let zombiesSeen = 0;    // a child between its exit and its reaping
    const sampler = setInterval(() => {
        const c = census();
        peak = Math.max(peak, c.children);
        zombiesSeen = Math.max(zombiesSeen, c.zombies);
    }, 1000);
    const progress = setInterval(() => {
        const c = census();
        say(`${done}/${N} done: ${JSON.stringify(stats)}; workers' RSS`
            + ` ${c.rss} kB (shared memory ${c.shm} kB)`);
    }, 15000);

    const third = Math.floor(N / 3);
    await runClients(0, third);
    const r1 = await reload('1/3');
    await runClients(third, 2 * third);
    const q = await quitRestart('2/3');

    // the last third on one worker generation: its RSS after a warm-up
    const warm = Math.min(50, Math.floor((N - 2 * third) / 4));
    const c1 = census();
    await runClients(2 * third, 2 * third + warm);
    const c2 = census();
    const rssStart = c2.rss;
    const gen = c2.workers.map((w) => w.pid).sort().join(',');
    say(`restarted: workers' RSS (sum of ${c2.workers.length})`
        + ` ${c1.rss} kB, ${rssStart} kB after ${warm} sessions (the start:`
        + ` ${c2.workers.map((w) => `${w.pid} ${w.rss}`).join(', ')})`);
    await runClients(2 * third + warm, N);
    clearInterval(progress);
    say(`${N} sessions done: ${JSON.stringify(stats)}`);

    // live sessions kept (an open GET stream is use), the rest expire
    const keep = [];
    for (let k = 0, tries = 0; k < KEEP && tries < 200; tries++) {
        const r = await request('POST', null, { jsonrpc: '2.0', id: 1,
            method: 'initialize', params: { protocolVersion: PV,
                capabilities: {}, clientInfo: { name: 'keep',
                                                version: '1' } } });
        const sid = r.headers && r.headers['mcp-session-id'];
        if (!sid) {
            await sleep(100);    // the bounds: the expiring hold them
            continue;
        }
        k++;
        await request('POST', sid, { jsonrpc: '2.0',
                                     method: 'notifications/initialized' });
        const g = http.request({ host: '127.0.0.1', port: PORT, path: '/mcp',
            method: 'GET', agent: false, headers: {
                Accept: 'text/event-stream', 'Mcp-Session-Id': sid,
                'MCP-Protocol-Version': PV } }, (res) => res.resume());
        g.on('error', () => {});
        g.end();
        keep.push({ sid, g });
    }
    const wait = TMO + 2 * STMO + 5;
    say(`${keep.length} sessions kept live; waiting up to ${wait + 20} s`
        + ' for the rest to expire');
    await sleep(wait * 1000);
    await waitFor(20, () => census().children <= keep.length);
    let live = 0;
    for (const k of keep) {
        const r = await request('POST', k.sid, { jsonrpc: '2.0', id: 9,
                                                 method: 'ping' });
        const m = answer(r, 9);
        if (m && m.result) live++;
    }
    const end = census();
    clearInterval(sampler);
    const rssEnd = end.rss;
    // the same generation's workers as at the start (none respawned)
    const sameGen = end.workers.map((w) => w.pid).sort().join(',') === gen;
    say(`after expiry: live sessions ${live}; ${fmt(end)}; workers' RSS`
        + ` (sum) ${rssEnd} kB (start ${rssStart} kB,`
        + ` ${((rssEnd / rssStart - 1) * 100).toFixed(1)}%;`
        + ` of which shared memory ${end.shm} kB, start ${c2.shm} kB;`
        + ` ${end.workers.map((w) => `${w.pid} ${w.rss}`).join(', ')};`
        + ` ${sameGen ? 'the same workers' : 'NOT the same workers'})`);
    say(`peak (1 s samples): ${peak} children, ${zombiesSeen} zombies`
        + ' at once (before reaping)');

    const r2 = await reload('end');
    for (const k of keep) k.g.destroy();
    const master = masterPid();
    nginx('-s', 'quit');
    await waitFor(60, () => !alive(master));
    const quitMarked = marked().length;
    const finalOrphans = await waitFor(STMO + 10,
        () => marked().length === 0) ? 0 : marked().length;
    say(`quit: marked processes at the master's exit ${quitMarked},`
        + ` ${STMO + 10} s later ${finalOrphans}`);

    const log = fs.readFileSync(path.join(dir, 'logs/error.log'), 'utf8');
    const levels = {};
    for (const m of log.matchAll(/\[(\w+)\]/g)) {
        levels[m[1]] = (levels[m[1]] || 0) + 1;
    }
    say(`error.log lines by level: ${JSON.stringify(levels)}`);
    const alerts = log.split('\n').filter((l) => /\[(alert|crit|emerg)\]/
                                                  .test(l));
    for (const l of alerts.slice(0, 5)) say(`  ${l}`);
    // sanitizer reports: errors, and the leak records with a frame of
    // the module or cJSON (those with nginx's and libc's alone are
    // nginx's own memory, as t/lib/McpTest.pm judges them)
    const asanErrors = log.split('\n').filter((l) =>
        /ERROR: AddressSanitizer|runtime error:/.test(l));
    const leaks = log.split(/\n(?=(?:Direct|Indirect) leak of )/)
        .slice(1).map((r) => r.split('\n\n')[0])
        .filter((r) => /ngx_http_mcp|cJSON_/.test(r));
    if (env.CHURN_NGINX_PRELOAD) {
        say(`sanitizer: ${asanErrors.length} error reports, ${leaks.length}`
            + ' leak records with a frame of the module');
        for (const l of asanErrors.slice(0, 3)) say(`  ${l}`);
        for (const l of leaks.slice(0, 3)) say(`  ${l}`);
    }

    const secsRun = (Date.now() - t0) / 1000;
    say(`${stats.opened} sessions opened in ${secsRun.toFixed(0)} s`
        + ` (${(stats.opened / secsRun).toFixed(1)}/s): ended by DELETE`
        + ` ${stats.delete}, abandoned ${stats.abandon}, closed mid-call`
        + ` ${stats.midcall}; cut by reload/quit ${stats.cut}; refused at`
        + ` initialize (over the bounds, retried) ${stats.refused};`
        + ` errors ${stats.errors}`);
    for (const e of errorSamples) say(`  error: ${e.slice(0, 200)}`);
    say(`cross-worker: ${xw.other} of ${xw.answered} answered requests`
        + ' after an initialize were answered by a worker other than its'
        + ` owner, in ${xw.sessions} of ${stats.opened} sessions; by kind`
        + ` (other/answered): ${Object.entries(xw.byKind)
            .map(([k, v]) => `${k} ${v[1]}/${v[0]}`).join(', ')}`);

    const checks = [
        ['no error', stats.errors === 0],
        ['children equal live sessions after expiry',
         end.children === live && live === keep.length],
        ['no zombie', end.zombies === 0],
        ['marked processes equal live sessions', end.marked === live],
        // under ASan the RSS holds its quarantine of freed memory
        ['workers\' RSS (sum) within 5% of its start, same workers'
         + (env.CHURN_NGINX_PRELOAD ? ' (not judged: sanitizer)' : ''),
         sameGen && (env.CHURN_NGINX_PRELOAD
                     || rssEnd <= rssStart * 1.05)],
        ...(W > 1 ? [['requests answered by a worker other than the'
                      + ' session\'s owner', xw.other > 0]] : []),
        ['reload at 1/3: old workers exited, no orphan',
         r1.gone && r1.after.orphans === 0],
        ['quit at 2/3: master exited, no orphan', q.gone && q.orphans === 0],
        ['reload at the end: old workers exited, no orphan',
         r2.gone && r2.after.orphans === 0],
        ['quit at the end: no orphan', finalOrphans === 0],
        ['no [alert]/[crit]/[emerg] in error.log', alerts.length === 0],
        ['no sanitizer report of the module',
         asanErrors.length === 0 && leaks.length === 0],
    ];
    let bad = 0;
    for (const [what, ok] of checks) {
        say(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
        if (!ok) bad++;
    }
    process.exit(bad ? 1 : 0);
}

main().catch((e) => {
    console.error(e);
    try { nginx('-s', 'stop'); } catch (x) { }
    process.exit(2);
});
