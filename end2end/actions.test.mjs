// Every action drawn as a form: an approval's "Request changes" draws the
// spec's refineFeedback as fields, "Edit and approve" draws the artifact
// pre-filled with its data, "Ask a question" a question box; nothing is a
// JSON text area. A clarification shows each question with its answer
// field. With and without JavaScript, then axe.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, api, PEOPLE, signIn, axe, waitForHydration } from './support.mjs';

const WORKFLOW = {
  id: 'e2e-actions',
  name: 'E2E actions',
  version: '1.0',
  variables: [{ name: 'order', type: 'object', required: true }],
  nodes: [{
    id: 'review',
    typeId: 'core.approvalGate',
    name: 'Review',
    config: {
      title: 'Approve the order',
      artifactData: { $bind: { type: 'variable', variableName: 'order' } },
      actions: ['accept', 'reject', 'refine', 'edit-accept', 'ask'],
      approverGroupRefs: ['finance'],
      requestSchema: {
        type: 'object',
        required: ['vendor', 'amount'],
        properties: {
          vendor: { type: 'string', title: 'Vendor' },
          amount: { type: 'number', title: 'Amount', minimum: 0 },
        },
      },
    },
  }],
  edges: [],
};

let server;

before(async () => {
  server = await startServer(PEOPLE);
  const res = await api(server.url, 'PUT', '/workflows/e2e-actions', WORKFLOW);
  assert.ok([200, 201].includes(res.status), JSON.stringify(res.body));
});

after(async () => {
  await server?.stop();
});

function pathOf(runId, node) {
  return `/runs/${encodeURIComponent(runId).replace(/%2F/gi, '~2F')}/interrupts/${node}`;
}

async function pending(workflowId, inputs, node) {
  const res = await api(server.url, 'POST', '/runs', { workflowId, inputs });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  const path = pathOf(res.body.runId, node);
  for (let i = 0; i < 200; i++) {
    const got = await api(server.url, 'GET', path);
    if (got.status === 200 && got.body.status === 'pending') return path;
    await new Promise((ok) => setTimeout(ok, 50));
  }
  assert.fail(`${path} never became pending`);
}

const order = () => pending('e2e-actions', { order: { vendor: 'Acme', amount: 1200 } }, 'review');

async function grace(js) {
  const ctx = await launchBrowser({ javaScriptEnabled: js });
  const page = await ctx.newPage();
  await signIn(page, server.url, 'grace');
  return { ctx, page };
}

async function open(page, path, js) {
  const res = await page.goto(server.url + path);
  assert.equal(res.status(), 200, path);
  if (js) await waitForHydration(page);
}

async function submit(page, button) {
  const [res] = await Promise.all([page.waitForNavigation(), page.click(button)]);
  return res;
}

async function view(path) {
  return (await api(server.url, 'GET', path)).body;
}

for (const js of [true, false]) {
  const how = js ? 'with JavaScript' : 'without JavaScript';

  test(`an approval's actions are fields, not JSON (${how})`, async () => {
    const { ctx, page } = await grace(js);
    try {
      const path = await order();
      await open(page, path, js);
      assert.equal(await page.locator('#decide-form textarea.font-mono').count(), 0, 'no JSON text area');
      // refineFeedback: scope, section, items, tags, text.
      for (const id of ['#answer-refineFeedback-scope', '#answer-refineFeedback-sectionPath', '#answer-refineFeedback-text']) {
        assert.equal(await page.locator(id).count(), 1, id);
      }
      assert.match(await page.textContent('#decide-form'), /Items/);
      assert.match(await page.textContent('#decide-form'), /Tags/);
      // The artifact, pre-filled with the data the run sent.
      assert.equal(await page.inputValue('#answer-editedArtifactData-vendor'), 'Acme');
      assert.equal(await page.inputValue('#answer-editedArtifactData-amount'), '1200');
      assert.equal(await page.locator('#answer-question').count(), 1);
      if (js) assert.deepEqual(await axe(page), []); // axe needs scripts

      // Request changes: only the refine fields go with it.
      await page.selectOption('#answer-refineFeedback-scope', 'section');
      await page.fill('#answer-refineFeedback-sectionPath', 'terms.payment');
      await page.fill('#answer-refineFeedback-text', 'Pay in 30 days, not 10.');
      await page.fill('#answer-question', 'not sent');
      await submit(page, '#action-refine');
      assert.ok(await page.locator('#decided').count() === 1, await page.textContent('main'));
      const refined = await view(path);
      assert.equal(refined.status, 'resolved', JSON.stringify(refined));
      assert.deepEqual(refined.resolution.resumeValue.refineFeedback, {
        scope: 'section', sectionPath: 'terms.payment', text: 'Pay in 30 days, not 10.',
      });
      assert.equal(refined.resolution.resumeValue.editedArtifactData, undefined);

      // Edit and approve: the edited artifact.
      const edit = await order();
      await open(page, edit, js);
      await page.fill('#answer-editedArtifactData-amount', '1000');
      await submit(page, '#action-edit-accept');
      const edited = await view(edit);
      assert.equal(edited.status, 'resolved', JSON.stringify(edited));
      assert.deepEqual(edited.resolution.resumeValue.editedArtifactData, { vendor: 'Acme', amount: 1000 });
      assert.equal(edited.resolution.resumeValue.refineFeedback, undefined);

      // Ask a question: sent as feedback; the request stays open.
      const ask = await order();
      await open(page, ask, js);
      await page.fill('#answer-question', 'Which cost centre?');
      await submit(page, '#action-ask');
      const asked = await view(ask);
      assert.equal(asked.status, 'pending');
      const vote = asked.votes.find((v) => v.action === 'ask');
      // The engine stamps decidedAt itself.
      const { decidedAt, ...sent } = vote.resumeValue;
      assert.ok(decidedAt);
      assert.deepEqual(sent, { action: 'ask', feedback: 'Which cost centre?' });
    } finally {
      await ctx.close();
    }
  });

  test(`a clarification shows each question with its answer field (${how})`, async () => {
    const { ctx, page } = await grace(js);
    try {
      const path = await pending('conformance-clarification', {}, 'ask');
      await open(page, path, js);
      assert.doesNotMatch(await page.textContent('main'), /Nothing\./);
      const label = await page.textContent('label[for="answer-answers-q1"]');
      assert.match(label, /What is your favorite color\?/);
      await page.fill('#answer-answers-q1', 'teal');
      await submit(page, '#action-submit');
      const done = await view(path);
      assert.equal(done.status, 'resolved', JSON.stringify(done));
      assert.deepEqual(done.resolution.resumeValue, { answers: { q1: 'teal' } });
      if (js) assert.deepEqual(await axe(page), []); // axe needs scripts
    } finally {
      await ctx.close();
    }
  });
}
