// Shared helpers for browser tests: a real Tollgate server on 127.0.0.1 with
// its own database, and Debian's Chromium driven by playwright-core.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium } from 'playwright-core';

/**
 * Removes a test's scratch directory. A leftover one is not worth failing a
 * test over: Chromium's helper processes may still be writing to its profile
 * just after the browser closes (`scripts/test.sh` removes what is left).
 */
const removeDir = (dir) => {
  try {
    rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  } catch {
    // left for the caller's temporary directory
  }
};

export const ROOT = resolve(import.meta.dirname, '..');
const BIN = process.env.TOLLGATE_BIN ?? join(ROOT, 'target/debug/tollgate');

export const ADMIN_KEY = 'e2e-admin-key-0123456789';

/** A port free on 127.0.0.1 a moment ago. */
export function freePort() {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => ok(port)); });
  });
}

/**
 * Starts a server with a fresh database; resolves to { url, stop }.
 * `publicUrl`: bind a known port and say it as `public_url`, so mailed links
 * are absolute and open in a browser.
 */
export async function startServer(extraToml = '', { workflowDirs = [], publicUrl = false } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-e2e-'));
  const config = join(dir, 'tollgate.toml');
  const bind = publicUrl ? `127.0.0.1:${await freePort()}` : '127.0.0.1:0';
  writeFileSync(config, `
[server]
bind = "${bind}"
${publicUrl ? `public_url = "http://${bind}"` : ''}
site_root = "${join(ROOT, 'target/site')}"
timer_interval_ms = 50

[database]
url = "sqlite://${join(dir, 'e2e.db')}"

[workflows]
dirs = [${[join(ROOT, 'workflows/conformance'), join(ROOT, 'workflows/kinds'), ...workflowDirs].map((d) => JSON.stringify(d)).join(', ')}]

# Every kind is offered (workflows/kinds has a credential interrupt).
[interrupts]
credential = true

[[principals]]
id = "admin"
name = "Ada Admin"

[[api_keys]]
key = "${ADMIN_KEY}"
principal = "admin"
scopes = ["admin"]
${extraToml}
`);
  const child = spawn(BIN, ['serve', '--config', config], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, RUST_LOG: 'warn' },
  });
  let log = '';
  child.stderr.on('data', (d) => { log += d; });
  const url = await new Promise((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`server did not start:\n${log}`)), 30000);
    child.stdout.on('data', (d) => {
      const m = /listening on (http:\/\/\S+)/.exec(String(d));
      if (m) { clearTimeout(timer); ok(m[1]); }
    });
    child.on('exit', (code) => { clearTimeout(timer); fail(new Error(`server exited ${code}:\n${log}`)); });
  });
  return {
    url,
    log: () => log,
    stop: () => new Promise((ok) => {
      child.once('exit', () => { removeDir(dir); ok(); });
      child.kill('SIGTERM');
    }),
  };
}

/**
 * A real SMTP server: Debian's aiosmtpd (`/usr/bin/python3`, the interpreter
 * python3-aiosmtpd is installed for) storing each message in a Maildir.
 * Resolves to { toml (the [smtp] section), next(ms) (the next message's
 * raw bytes), stop }.
 */
export async function startSmtp() {
  const root = mkdtempSync(join(tmpdir(), 'tollgate-smtp-'));
  const dir = join(root, 'mail');
  const port = await freePort();
  const child = spawn('/usr/bin/python3', ['-m', 'aiosmtpd', '-n', '-l', `127.0.0.1:${port}`, '-c', 'aiosmtpd.handlers.Mailbox', dir],
    { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr.on('data', (d) => { log += d; });
  const accepts = () => new Promise((ok) => {
    const c = connect(port, '127.0.0.1', () => { c.destroy(); ok(true); });
    c.on('error', () => ok(false));
  });
  for (let i = 0; !(await accepts()); i++) {
    if (i > 200 || child.exitCode !== null) throw new Error(`aiosmtpd did not start:\n${log}`);
    await new Promise((ok) => setTimeout(ok, 50));
  }
  const seen = new Set();
  return {
    toml: `\n[smtp]\nhost = "127.0.0.1"\nport = ${port}\ntls = "none"\nfrom = "Tollgate <tollgate@example.com>"\n`,
    async next(ms = 20000) {
      for (const end = Date.now() + ms; Date.now() < end;) {
        let names = [];
        try { names = readdirSync(join(dir, 'new')).sort(); } catch { /* not created yet */ }
        const name = names.find((n) => !seen.has(n));
        if (name) { seen.add(name); return readFileSync(join(dir, 'new', name)); }
        await new Promise((ok) => setTimeout(ok, 50));
      }
      throw new Error(`no mail within ${ms} ms:\n${log}`);
    },
    stop: () => new Promise((ok) => {
      const done = () => { removeDir(root); ok(); };
      if (child.exitCode !== null) return done();
      child.once('exit', done);
      child.kill('SIGTERM');
    }),
  };
}

/** Launches Debian's Chromium (never a downloaded browser). */
export async function launchBrowser(options = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-chromium-'));
  const context = await chromium.launchPersistentContext(dataDir, {
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: [
      '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
    ],
    ...options,
  });
  // The profile is the browser's alone; it goes once the browser has exited.
  context.once('close', () => removeDir(dataDir));
  return context;
}

/** A run id as one path segment (the OpenWOP wire form: `/` is `~2F`). */
export const runSegment = (runId) => encodeURIComponent(runId).replace(/%2F/gi, '~2F');

/**
 * Starts a run of `workflowId` through the API as the e2e admin and waits
 * until its interrupt at `node` is pending; resolves to { runId, path } of
 * that interrupt's page.
 */
export async function startGateRun(base, workflowId, inputs = {}, node = 'review') {
  const res = await api(base, 'POST', '/runs', { workflowId, inputs });
  if (res.status !== 201) throw new Error(`POST /runs ${workflowId}: ${res.status} ${JSON.stringify(res.body)}`);
  const runId = res.body.runId;
  const path = `/runs/${runSegment(runId)}/interrupts/${node}`;
  for (let i = 0; i < 100; i++) {
    const got = await api(base, 'GET', path);
    if (got.status === 200 && got.body.status === 'pending') break;
    await new Promise((ok) => setTimeout(ok, 50));
  }
  return { runId, path };
}

/** Calls the REST API as the e2e admin. */
export async function api(base, method, path, body) {
  const res = await fetch(base + path, {
    method,
    headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

export async function waitForHydration(page) {
  await page.waitForSelector('[data-hydrated="true"]', { state: 'attached', timeout: 30000 });
}

/** argon2 PHC strings of the e2e people's passwords (`<id>-pass`), made with `tollgate hash-password`. */
export const PEOPLE = `
[[principals]]
id = "ada"
name = "Ada Lovelace"
groups = ["finance"]
password_hash = "$argon2id$v=19$m=19456,t=2,p=1$PZW5Ij8VWtYmVEDXYu8Rzw$n9whw1eFTI96i/mE4iCeS5Ax97rG4kVWOnbqUHpCya8"

[[principals]]
id = "grace"
name = "Grace Hopper"
groups = ["finance"]
password_hash = "$argon2id$v=19$m=19456,t=2,p=1$dqsYo6XzHP9qis/Mdc84ug$WJRGTNwWSpJdzMZrC09ZEO2aItjhOwyyFEaeV9po558"

[[principals]]
id = "linus"
name = "Linus Pauling"
groups = ["procurement"]
password_hash = "$argon2id$v=19$m=19456,t=2,p=1$/87WVExOlNgsj6ua59L2Xw$9Zpllic/3dUwcHTFBRJ/JymKKfPKT4G3SN1HTKFMd88"

[[api_keys]]
key = "e2e-grace-key-0123456789"
principal = "grace"
scopes = ["runs:read", "approvals:respond"]

[[token_keys]]
kid = "e2e-1"
secret = "e2e-token-secret-0123456789-0123456789"

# Every browser test signs in from 127.0.0.1.
[sign_in]
address_attempts = 500
`;
// Their passwords (the hashes above are of these).
export const PASSWORDS = { ada: 'ada-demo-pass', grace: 'grace-demo-pass', linus: 'linus-demo-pass' };

/** Signs in through the form; leaves the page on the inbox. */
export async function signIn(page, base, user) {
  await page.goto(base + '/signin');
  await page.fill('#signin-user', user);
  await page.fill('#signin-password', PASSWORDS[user]);
  await Promise.all([page.waitForNavigation(), page.click('#signin-submit')]);
}

/** Runs axe-core on the page; returns serious and critical violations. */
export async function axe(page) {
  // Evaluated through the driver: the page's CSP (rightly) refuses an injected <script>.
  await page.evaluate(`${readFileSync(join(ROOT, 'node_modules/axe-core/axe.min.js'), 'utf8')}\n;true`);
  const result = await page.evaluate(async () => await window.axe.run(document));
  return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}
