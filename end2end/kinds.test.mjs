// Every interrupt kind drawn for a person (workflows/kinds): the inbox names
// the kind with a one-line summary; each kind's page shows what it asks and
// takes its answer through a plain form post, with JavaScript and without;
// errors come back beside their fields; every page is axe-clean.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, api, PEOPLE, signIn, axe, waitForHydration } from './support.mjs';

const GRACE_KEY = 'e2e-grace-key-0123456789';

let server;
let ada; // one signed-in browser with JavaScript
let plain; // one signed-in browser without JavaScript
const scriptErrors = []; // errors the hydrated pages reported

const pathOf = (runId, node) => `/runs/${encodeURIComponent(runId).replace(/%2F/gi, '~2F')}/interrupts/${node}`;

/** Starts a run of a workflows/kinds workflow; resolves to { runId, path } once `node` is pending. */
async function startAt(workflowId, inputs, node) {
  const res = await api(server.url, 'POST', '/runs', { workflowId, inputs });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  const runId = res.body.runId;
  const path = pathOf(runId, node);
  await pendingAt(path);
  return { runId, path };
}

async function pendingAt(path) {
  for (let i = 0; i < 200; i++) {
    const got = await api(server.url, 'GET', path);
    if (got.status === 200 && got.body.status === 'pending') return got.body;
    await new Promise((ok) => setTimeout(ok, 50));
  }
  assert.fail(`${path} never became pending`);
}

async function runOf(runId) {
  return (await api(server.url, 'GET', `/runs/${encodeURIComponent(runId).replace(/%2F/gi, '~2F')}`)).body;
}

/** The resume value an interrupt was resolved with. */
async function resumeOf(path) {
  const body = (await api(server.url, 'GET', path)).body;
  assert.equal(body.status, 'resolved', JSON.stringify(body));
  return body.resolution.resumeValue;
}

/** Opens `path`; with JavaScript, waits until the page is interactive. */
async function open(page, path) {
  const res = await page.goto(server.url + path);
  assert.equal(res.status(), 200, path);
  if (page !== plain) await waitForHydration(page);
}

/** Submits the decide form by clicking `button`; resolves to the response of the page that follows. */
async function submit(page, button) {
  const [res] = await Promise.all([page.waitForNavigation(), page.click(button)]);
  return res;
}

async function text(page, selector) {
  return (await page.textContent(selector))?.trim();
}

async function noAxe(page, what) {
  assert.deepEqual(await axe(page), [], what);
}

before(async () => {
  server = await startServer(PEOPLE);
  const ctx = await launchBrowser();
  ada = await ctx.newPage();
  ada.on('pageerror', (e) => scriptErrors.push(String(e)));
  // Not the 400 pages of refused answers (Chromium logs their status), only script errors.
  ada.on('console', (m) => {
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) scriptErrors.push(m.text());
  });
  await signIn(ada, server.url, 'ada');
  const noScript = await launchBrowser({ javaScriptEnabled: false });
  plain = await noScript.newPage();
  await signIn(plain, server.url, 'grace');
});

after(async () => {
  await ada?.context().close();
  await plain?.context().close();
  await server?.stop();
});

test('the inbox names each kind with a one-line summary', async () => {
  const runs = {
    clarification: await startAt('kind-clarification', { service: 'checkout' }, 'ask'),
    event: await startAt('kind-external-event', { orderId: 'o-inbox' }, 'paid'),
    agent: await startAt('kind-low-confidence', { queue: 'billing', confidence: 0.41 }, 'route'),
    credential: await startAt('kind-credential', {}, 'connect'),
    custom: await startAt('kind-custom', { document: 'scan-inbox.pdf' }, 'label'),
    conversation: await startAt('kind-conversation', { topic: 'boots' }, 'open'),
  };
  await ada.goto(server.url + '/');
  const rows = await ada.$$eval('#inbox tbody tr', (trs) => trs.map((tr) => ({
    run: tr.dataset.run,
    title: tr.querySelector('td a')?.textContent.trim(),
    summary: tr.querySelector('[data-summary]')?.textContent.trim() ?? null,
    kind: tr.querySelector('[data-kind]')?.textContent.trim(),
  })));
  const row = (r) => rows.find((x) => x.run === r.runId) ?? assert.fail(`no row for ${r.runId}: ${JSON.stringify(rows)}`);
  assert.deepEqual(row(runs.clarification), {
    run: runs.clarification.runId,
    title: 'Which region should checkout be deployed to?',
    summary: '2 questions: Which region should checkout be deployed to? · When may it be deployed?',
    kind: 'Clarification',
  });
  assert.deepEqual(row(runs.event), {
    run: runs.event.runId, title: 'Payment received', summary: 'Waiting for payment.captured (orderId o-inbox)', kind: 'External event',
  });
  assert.deepEqual(row(runs.agent), {
    run: runs.agent.runId,
    title: 'Route the ticket',
    summary: 'ticket-router proposes billing at 41% confidence (threshold 80%)',
    kind: 'Low confidence',
  });
  assert.deepEqual(row(runs.credential), {
    run: runs.credential.runId, title: 'Reconnect the CRM', summary: 'Connect crm (contacts.read): expired', kind: 'Credential',
  });
  assert.deepEqual(row(runs.custom), {
    run: runs.custom.runId, title: 'Label the document', summary: 'document.label', kind: 'Custom',
  });
  assert.deepEqual(row(runs.conversation), {
    run: runs.conversation.runId, title: 'About boots', summary: 'I have a few questions before I go on.', kind: 'Conversation start',
  });
  // The kind filter offers the kinds waiting.
  const kinds = await ada.$$eval('#filter-kind option', (os) => os.map((o) => o.textContent.trim()));
  for (const k of ['Clarification', 'External event', 'Low confidence', 'Credential', 'Custom', 'Conversation start']) {
    assert.ok(kinds.includes(k), JSON.stringify(kinds));
  }
  await noAxe(ada, 'inbox with every kind');
});

test('clarification: each question labels its answer field; answers are keyed by question id', async () => {
  const run = await startAt('kind-clarification', { service: 'checkout' }, 'ask');
  await open(ada, run.path);
  assert.equal(await text(ada, '#interrupt-kind'), 'Clarification');
  // The questions, not "Request: Nothing."
  assert.equal(await ada.$('#request-heading'), null);
  assert.equal(await text(ada, 'label[for="answer-answers-region"]'), 'Which region should checkout be deployed to? *');
  assert.equal(await text(ada, 'label[for="answer-answers-window"]'), 'When may it be deployed? *');
  assert.deepEqual(
    await ada.$$eval('#answer-answers-region option', (os) => os.map((o) => o.value)),
    ['', 'eu-west', 'us-east'],
  );
  await noAxe(ada, 'clarification page');
  // A question left unanswered: the error is beside it, the other answer kept.
  await ada.selectOption('#answer-answers-region', 'eu-west');
  const bad = await submit(ada, '#action-submit');
  assert.equal(bad.status(), 400);
  assert.match(await text(ada, '#answer-answers-window-error'), /needs an answer/);
  assert.equal(await ada.getAttribute('#answer-answers-window', 'aria-invalid'), 'true');
  assert.equal(await ada.inputValue('#answer-answers-region'), 'eu-west');
  await noAxe(ada, 'clarification page with an error');
  await ada.fill('#answer-answers-window', 'after 18:00');
  await submit(ada, '#action-submit');
  assert.match(ada.url(), /\?decided=1$/);
  assert.deepEqual(await resumeOf(run.path), { answers: { region: 'eu-west', window: 'after 18:00' } });
  assert.equal((await runOf(run.runId)).status, 'completed');
  // Decided: the questions are listed read-only.
  assert.deepEqual(await ada.$$eval('#questions li', (lis) => lis.map((li) => li.dataset.question)), ['region', 'window']);

  // Without JavaScript.
  const other = await startAt('kind-clarification', { service: 'search' }, 'ask');
  await open(plain, other.path);
  await plain.selectOption('#answer-answers-region', 'us-east');
  await plain.fill('#answer-answers-window', 'now');
  await submit(plain, '#action-submit');
  assert.match(plain.url(), /\?decided=1$/);
  assert.deepEqual(await resumeOf(other.path), { answers: { region: 'us-east', window: 'now' } });
});

test('external event: shows what it waits for; a person may record it, pre-filled with the correlation', async () => {
  const run = await startAt('kind-external-event', { orderId: 'o-<b>17</b>' }, 'paid');
  await open(ada, run.path);
  assert.equal(await text(ada, '#event-type'), 'payment.captured');
  // Drawn from data, escaped: the markup is text.
  assert.equal(await text(ada, '[data-correlation="orderId"] dd'), 'o-<b>17</b>');
  assert.equal(await ada.$('#waiting-for b'), null);
  assert.equal(await ada.inputValue('#answer-orderId'), 'o-<b>17</b>');
  await noAxe(ada, 'external event page');
  // Another order's event is refused beside the field.
  await ada.fill('#answer-orderId', 'o-18');
  await ada.fill('#answer-amount', '12.5');
  const bad = await submit(ada, '#action-submit');
  assert.equal(bad.status(), 400);
  assert.match(await text(ada, '#answer-orderId-error'), /correlation/);
  await noAxe(ada, 'external event page with an error');
  await ada.fill('#answer-orderId', 'o-<b>17</b>');
  await submit(ada, '#action-submit');
  assert.match(ada.url(), /\?decided=1$/);
  assert.deepEqual(await resumeOf(run.path), { orderId: 'o-<b>17</b>', amount: 12.5 });
  assert.equal((await runOf(run.runId)).status, 'completed');
  // Decided: still described, no form.
  assert.equal(await text(ada, '#event-type'), 'payment.captured');
  assert.equal(await ada.$('#decide-form'), null);

  // Without JavaScript.
  const other = await startAt('kind-external-event', { orderId: 'o-19' }, 'paid');
  await open(plain, other.path);
  assert.equal(await plain.inputValue('#answer-orderId'), 'o-19');
  await plain.fill('#answer-amount', '3');
  await submit(plain, '#action-submit');
  assert.match(plain.url(), /\?decided=1$/);
  assert.deepEqual(await resumeOf(other.path), { orderId: 'o-19', amount: 3 });

  // Someone who may not supply it (an inspect-only link) reads what it waits for, with no form.
  const third = await startAt('kind-external-event', { orderId: 'o-20' }, 'paid');
  const res = await fetch(`${server.url}${third.path}?intent=inspect`, { headers: { authorization: `Bearer ${GRACE_KEY}` } });
  const { token } = await res.json();
  assert.ok(token, 'the REST inspect gives a link');
  const page = await (await launchBrowser()).newPage();
  await page.goto(`${server.url}/t/${token}`);
  assert.equal(await text(page, '#event-type'), 'payment.captured');
  assert.equal(await text(page, '[data-correlation="orderId"] dd'), 'o-20');
  assert.equal(await page.$('#decide-form'), null);
  assert.match(await text(page, '#not-eligible'), /may only show/);
  await noAxe(page, 'external event through an inspect-only link');
  await page.context().close();
});

test('low confidence: the agent, its threshold, confidence and decision; Confirm or Replace', async () => {
  const run = await startAt('kind-low-confidence', { queue: 'billing', confidence: 0.41 }, 'route');
  await open(ada, run.path);
  assert.equal(await text(ada, '#agent-id'), 'ticket-router');
  assert.equal(await text(ada, '#agent-proposal'), 'billing');
  assert.equal(await text(ada, '#agent-confidence'), '41%');
  assert.equal(await text(ada, '#agent-threshold'), '80%');
  assert.equal(await text(ada, '#outcome-confirmed'), 'Confirm');
  assert.equal(await text(ada, '#outcome-replaced'), 'Replace');
  // The outcome is the buttons, not a field.
  assert.equal(await ada.$('#answer-outcome'), null);
  await noAxe(ada, 'low-confidence page');
  // Replacing needs the replacement: the error is beside it.
  await ada.fill('#answer-comment', 'Wrong queue');
  const bad = await submit(ada, '#outcome-replaced');
  assert.equal(bad.status(), 400);
  assert.match(await text(ada, '#answer-decision-error'), /decision/);
  assert.equal(await ada.inputValue('#answer-comment'), 'Wrong queue');
  await noAxe(ada, 'low-confidence page with an error');
  await ada.selectOption('#answer-decision', 'technical');
  await submit(ada, '#outcome-replaced');
  assert.match(ada.url(), /\?decided=1$/);
  assert.deepEqual(await resumeOf(run.path), { outcome: 'replaced', decision: 'technical', comment: 'Wrong queue' });
  const replaced = await runOf(run.runId);
  assert.equal(replaced.status, 'completed');

  // Confirm, without JavaScript: the agent's decision goes on, nothing else is sent.
  const other = await startAt('kind-low-confidence', { queue: 'billing', confidence: 0.2 }, 'route');
  await open(plain, other.path);
  await plain.selectOption('#answer-decision', 'sales');
  await submit(plain, '#outcome-confirmed');
  assert.match(plain.url(), /\?decided=1$/);
  assert.deepEqual(await resumeOf(other.path), { outcome: 'confirmed' });
  assert.equal((await runOf(other.runId)).status, 'completed');
});

test('credential: provider, scopes, reason and the connect link; Authorized or Declined, nothing else', async () => {
  const run = await startAt('kind-credential', {}, 'connect');
  await open(ada, run.path);
  assert.equal(await text(ada, '#credential-provider'), 'crm');
  assert.deepEqual(await ada.$$eval('#credential-scopes li', (lis) => lis.map((li) => li.textContent.trim())), ['contacts.read']);
  assert.equal(await text(ada, '#credential-reason'), 'The connection has expired.');
  assert.equal(await ada.getAttribute('#connect-link', 'href'), 'https://tollgate.example/connect/crm');
  assert.equal(await ada.getAttribute('#connect-link', 'rel'), 'noopener noreferrer');
  assert.equal(await text(ada, '#outcome-authorized'), 'Authorized');
  assert.equal(await text(ada, '#outcome-declined'), 'Declined');
  // No field asks for anything: the resume is exactly {outcome}.
  assert.equal(await ada.$$eval('#decide-form input, #decide-form select, #decide-form textarea', (els) => els.length), 0);
  await noAxe(ada, 'credential page');
  await submit(ada, '#outcome-authorized');
  assert.match(ada.url(), /\?decided=1$/);
  assert.deepEqual(await resumeOf(run.path), { outcome: 'authorized' });
  assert.equal((await runOf(run.runId)).status, 'completed');

  // Declined, without JavaScript: the node fails as the engine says.
  const other = await startAt('kind-credential', {}, 'connect');
  await open(plain, other.path);
  await submit(plain, '#outcome-declined');
  assert.match(plain.url(), /\?decided=1$/);
  assert.deepEqual(await resumeOf(other.path), { outcome: 'declined' });
  const failed = await runOf(other.runId);
  assert.equal(failed.status, 'failed');
  assert.equal(failed.error.code, 'connector_auth_declined');
});

test('custom: the request drawn from requestSchema over data.payload, the answer from resumeSchema', async () => {
  const run = await startAt('kind-custom', { document: 'scan-1.pdf' }, 'label');
  await open(ada, run.path);
  assert.equal(await text(ada, '#custom-kind'), 'document.label');
  assert.match(await text(ada, 'section[aria-labelledby="request-heading"]'), /Document\s*scan-1\.pdf/);
  assert.equal(await text(ada, 'label[for="answer-outcome"]'), 'Label *');
  await noAxe(ada, 'custom page');
  await ada.fill('#answer-note', 'keep');
  const bad = await submit(ada, '#action-submit');
  assert.equal(bad.status(), 400);
  assert.ok(await ada.$('#answer-outcome-error'));
  assert.equal(await ada.inputValue('#answer-note'), 'keep');
  await ada.selectOption('#answer-outcome', 'contract');
  await submit(ada, '#action-submit');
  assert.match(ada.url(), /\?decided=1$/);
  assert.deepEqual(await resumeOf(run.path), { outcome: 'contract', note: 'keep' });
  assert.equal((await runOf(run.runId)).status, 'completed');

  const other = await startAt('kind-custom', { document: 'scan-2.pdf' }, 'label');
  await open(plain, other.path);
  await plain.selectOption('#answer-outcome', 'invoice');
  await submit(plain, '#action-submit');
  assert.match(plain.url(), /\?decided=1$/);
  assert.deepEqual(await resumeOf(other.path), { outcome: 'invoice' });
});

test('conversation: start, a turn and the close show the thread; the answer form is the turn\'s outcomeSchema', async () => {
  const topic = 'boots <img src=x>';
  const run = await startAt('kind-conversation', { topic }, 'open');
  // The start: the opening prompt in the thread.
  await open(ada, run.path);
  assert.equal(await text(ada, '#interrupt-kind'), 'Conversation start');
  assert.equal(await text(ada, '#thread-heading'), `About ${topic}`);
  assert.equal(await ada.$('main img'), null);
  assert.equal(await text(ada, '#conversation-id'), `conv-${run.runId}`);
  assert.deepEqual(await ada.$$eval('#thread > li', (lis) => lis.map((li) => [li.dataset.kind, li.getAttribute('aria-current')])),
    [['conversation.start', 'step']]);
  assert.equal(await text(ada, '#thread [data-prompt]'), 'I have a few questions before I go on.');
  await noAxe(ada, 'conversation start');
  await submit(ada, '#action-submit');
  assert.match(ada.url(), /\?decided=1$/);

  // The turn, without JavaScript: the thread so far, then the prompt, and the outcomeSchema form.
  const turn = pathOf(run.runId, 'turn');
  await pendingAt(turn);
  await open(plain, turn);
  assert.equal(await text(plain, '#interrupt-kind'), 'Conversation turn');
  assert.deepEqual(
    await plain.$$eval('#thread > li', (lis) => lis.map((li) => [li.dataset.kind, li.querySelector('[data-prompt]')?.textContent.trim() ?? null, li.getAttribute('aria-current')])),
    [
      ['conversation.start', 'I have a few questions before I go on.', null],
      ['conversation.exchange', `Which size of ${topic} do you need?`, 'step'],
    ],
  );
  assert.equal(await text(plain, 'label[for="answer-size"]'), 'Size *');
  await plain.fill('#answer-note', 'wide fit');
  const bad = await submit(plain, '#action-submit');
  assert.equal(bad.status(), 400);
  assert.ok(await plain.$('#answer-size-error'));
  assert.equal(await plain.inputValue('#answer-note'), 'wide fit');
  await plain.selectOption('#answer-size', 'M');
  await submit(plain, '#action-submit');
  assert.match(plain.url(), /\?decided=1$/);
  assert.deepEqual(await resumeOf(turn), { size: 'M', note: 'wide fit' });

  // The close, with JavaScript: the turn's answer is in the thread.
  const close = pathOf(run.runId, 'close');
  await pendingAt(close);
  await open(ada, close);
  const entries = await ada.$$eval('#thread > li', (lis) => lis.map((li) => ({
    kind: li.dataset.kind,
    answer: li.querySelector('[data-answer]')?.textContent.replace(/\s+/g, ' ').trim() ?? null,
    current: li.getAttribute('aria-current'),
  })));
  assert.deepEqual(entries.map((e) => [e.kind, e.current]), [
    ['conversation.start', null], ['conversation.exchange', null], ['conversation.close', 'step'],
  ]);
  assert.match(entries[1].answer, /Size\s*M/);
  assert.match(entries[1].answer, /Anything else\?\s*wide fit/);
  await noAxe(ada, 'conversation close');
  assert.equal(await text(ada, '#action-submit'), 'Close the conversation');
  await submit(ada, '#action-submit');
  assert.match(ada.url(), /\?decided=1$/);
  assert.equal((await runOf(run.runId)).status, 'completed');
  assert.equal(await text(ada, '#thread-closed'), 'The conversation is closed (goal-reached).');
});

test('the pages hydrated without a script error', () => {
  assert.deepEqual(scriptErrors, []);
});
