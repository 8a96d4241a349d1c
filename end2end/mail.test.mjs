// Mail end to end: the server sends over SMTP to a real SMTP server
// (aiosmtpd); each message is parsed as a mail client would (mailparser),
// its HTML part is opened in Chromium, and its one button leads to the token
// page, where the decision is made — with JavaScript, and without it. An
// expired link's page mails a fresh one, whose link decides.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { simpleParser } from 'mailparser';
import { startServer, startSmtp, launchBrowser, api, waitForHydration } from './support.mjs';

const TOKEN_KID = 'e2e-mail';
const TOKEN_SECRET = 'e2e-mail-token-secret-0123456789-0123456789';
const PEOPLE = `
[[principals]]
id = "mira"
name = "Mira Mailer"
email = "mira@example.com"
groups = ["reviewers"]

[[principals]]
id = "otto"
name = "Otto <Other> & Co"
email = "otto@example.com"
groups = ["reviewers"]

[[token_keys]]
kid = "${TOKEN_KID}"
secret = "${TOKEN_SECRET}"

[notifications]
poll_interval_ms = 50
`;

/** One gate for the reviewers; `extra` adds to its config. */
function workflow(id, extra) {
  return {
    id,
    name: `E2E ${id}`,
    version: '1.0',
    variables: [{ name: 'vendor' }],
    nodes: [{
      id: 'review',
      typeId: 'core.approvalGate',
      name: 'Review',
      inputs: { vendor: { type: 'variable', variableName: 'vendor' } },
      config: {
        title: `Pay <script>alert("${id}")</script> & more`,
        actions: ['accept', 'reject'],
        approverGroupRefs: ['reviewers'],
        timeoutMs: 3 * 24 * 3600 * 1000,
        requestSchema: { type: 'object', properties: { vendor: { type: 'string', title: 'Vendor' } } },
        ...extra,
      },
    }],
    edges: [],
  };
}

let smtp;
let server;

before(async () => {
  smtp = await startSmtp();
  server = await startServer(PEOPLE + smtp.toml, { publicUrl: true });
  for (const wf of [workflow('e2e-mail-two', { requiredApprovals: 2 }), workflow('e2e-mail-one', {})]) {
    assert.ok([200, 201].includes((await api(server.url, 'PUT', `/workflows/${wf.id}`, wf)).status));
  }
});

after(async () => {
  await server?.stop();
  await smtp?.stop();
});

async function startRun(workflowId, vendor) {
  const runId = (await api(server.url, 'POST', '/runs', { workflowId, inputs: { vendor } })).body.runId;
  return `/runs/${encodeURIComponent(runId).replace(/%2F/gi, '~2F')}/interrupts/review`;
}

/** The next mails (as many as `n`), parsed, by recipient address. */
async function mails(n) {
  const got = {};
  for (let i = 0; i < n; i++) {
    const mail = await simpleParser(await smtp.next());
    got[mail.to.value[0].address] = mail;
  }
  return got;
}

/** The link of a mail's text part. */
function linkOf(mail) {
  const m = /http:\/\/127\.0\.0\.1:\d+\/t\/\S+/.exec(mail.text);
  assert.ok(m, mail.text);
  return m[0];
}

/** A copy of a link's token with its expiry past, signed with the configured key. */
function expiredCopy(link) {
  const token = link.split('/t/')[1];
  const [, , kid, payload] = token.split('.');
  assert.equal(kid, TOKEN_KID);
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
  const p = Buffer.from(JSON.stringify({ ...claims, a: Date.now() - 120_000, e: Date.now() - 60_000 })).toString('base64url');
  const mac = createHmac('sha256', TOKEN_SECRET).update(`hs256.${kid}.${p}`).digest('base64url');
  return `${link.split('/t/')[0]}/t/ow2.hs256.${kid}.${p}.${mac}`;
}

/** Opens a mail's HTML part as a mail client shows it, and follows its button to the token page. */
async function followButton(ctx, mail, { hydrated }) {
  const page = await ctx.newPage();
  await page.setContent(mail.html);
  const href = await page.getAttribute('a#open-link', 'href');
  assert.equal(href, linkOf(mail), 'the button and the text part carry one link');
  const [res] = await Promise.all([page.waitForNavigation(), page.click('a#open-link')]);
  assert.equal(res.status(), 200);
  assert.equal(page.url(), href);
  if (hydrated) await waitForHydration(page);
  return page;
}

async function decide(page) {
  const [res] = await Promise.all([page.waitForNavigation(), page.click('#action-accept')]);
  assert.equal(res.status(), 200);
  assert.match(await page.textContent('#link-problem h1'), /Thank you/);
}

test('each reviewer is mailed what is asked; the button of each mail decides, with JavaScript and without', async () => {
  const path = await startRun('e2e-mail-two', '<b>Acme</b> & Sons');
  const got = await mails(2);
  const mira = got['mira@example.com'];
  const otto = got['otto@example.com'];
  assert.ok(mira && otto, Object.keys(got).join());
  for (const mail of [mira, otto]) {
    assert.equal(mail.headers.get('content-type').value, 'multipart/alternative');
    assert.equal(mail.subject, 'Decision needed: Pay <script>alert("e2e-mail-two")</script> & more');
    assert.ok(!mail.html.includes('<script'), mail.html);
    assert.match(mail.html, /Pay &lt;script&gt;alert\(("|&quot;)e2e-mail-two("|&quot;)\)&lt;\/script&gt; &amp; more/);
    assert.match(mail.html, /&lt;b&gt;Acme&lt;\/b&gt; &amp; Sons/);
    assert.match(mail.html, />Vendor</);
    assert.match(mail.html, /Still needed: 2 approvals\./);
    assert.match(mail.html, /in (2|3) days — .* UTC/);
    assert.match(mail.text, /workflow: e2e-mail-two/);
  }
  assert.match(mira.html, /Who else may decide: Otto &lt;Other&gt; &amp; Co\./);
  assert.match(otto.text, /Who else may decide: Mira Mailer\./);
  assert.equal(otto.to.value[0].name, 'Otto <Other> & Co');

  // Mira, with JavaScript: the page hydrates, the button decides.
  const js = await launchBrowser();
  try {
    const page = await followButton(js, mira, { hydrated: true });
    assert.match(await page.textContent('#interrupt-title'), /Pay <script>alert\("e2e-mail-two"\)<\/script> & more/);
    await decide(page);
  } finally {
    await js.close();
  }
  let view = (await api(server.url, 'GET', path)).body;
  assert.equal(view.status, 'pending', 'one of two approvals');
  assert.deepEqual(view.votes.map((v) => v.principal), ['mira']);

  // Otto, without JavaScript: the same page, a plain form post.
  const plain = await launchBrowser({ javaScriptEnabled: false });
  try {
    const page = await followButton(plain, otto, { hydrated: false });
    await decide(page);
  } finally {
    await plain.close();
  }
  view = (await api(server.url, 'GET', path)).body;
  assert.equal(view.status, 'resolved');
  assert.deepEqual(view.votes.map((v) => v.principal).sort(), ['mira', 'otto']);
});

test("an expired link's page mails a fresh link, and the fresh link decides", async () => {
  const path = await startRun('e2e-mail-one', 'Late Ltd');
  const first = (await mails(2))['mira@example.com'];
  const ctx = await launchBrowser({ javaScriptEnabled: false });
  try {
    const page = await ctx.newPage();
    const gone = await page.goto(expiredCopy(linkOf(first)));
    assert.equal(gone.status(), 410);
    await Promise.all([page.waitForNavigation(), page.click('#fresh-link')]);
    assert.match(await page.textContent('#fresh-link-notice'), /./);

    const fresh = await simpleParser(await smtp.next());
    assert.equal(fresh.to.value[0].address, 'mira@example.com');
    assert.notEqual(linkOf(fresh), linkOf(first));
    const decided = await followButton(ctx, fresh, { hydrated: false });
    await decide(decided);
  } finally {
    await ctx.close();
  }
  const view = (await api(server.url, 'GET', path)).body;
  assert.equal(view.status, 'resolved');
  assert.deepEqual(view.votes.map((v) => v.principal), ['mira']);
});
