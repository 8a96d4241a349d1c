// Shared helpers for browser tests: a real Tollgate server on 127.0.0.1 with
// its own database, and Debian's Chromium driven by playwright-core.
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium } from 'playwright-core';

export const ROOT = resolve(import.meta.dirname, '..');
const BIN = process.env.TOLLGATE_BIN ?? join(ROOT, 'target/debug/tollgate');

export const ADMIN_KEY = 'e2e-admin-key-0123456789';

/** Starts a server with a fresh database; resolves to { url, stop }. */
export async function startServer(extraToml = '') {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-e2e-'));
  const config = join(dir, 'tollgate.toml');
  writeFileSync(config, `
[server]
bind = "127.0.0.1:0"
site_root = "${join(ROOT, 'target/site')}"
timer_interval_ms = 50

[database]
url = "sqlite://${join(dir, 'e2e.db')}"

[workflows]
dirs = ["${join(ROOT, 'workflows/conformance')}"]

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
    stop: () => new Promise((ok) => { child.once('exit', ok); child.kill('SIGTERM'); }),
  };
}

/** Launches Debian's Chromium (never a downloaded browser). */
export async function launchBrowser(options = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-chromium-'));
  return chromium.launchPersistentContext(dataDir, {
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: [
      '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
    ],
    ...options,
  });
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
