// The browser SDKs through CORS, in a real Chromium: openai-node and the
// Anthropic TypeScript SDK (each with `dangerouslyAllowBrowser`) and the
// Vercel AI SDK, bundled for the browser with esbuild and run in a page
// whose origin (http://localhost:PORT, served here) is not the gateway's
// (http://127.0.0.1:PORT). The mock gateway (mock.yaml) lists that origin
// under `server.cors` and nothing else: the preflights pass on the default
// `allow_headers` alone. Both are loopback addresses, so Chromium's
// local-network checks stay out of the way, as for an app and its gateway
// on one network.
//
// Chromium is Debian's (/usr/bin/chromium; run.sh installs it), driven by
// playwright-core, headless, in a fresh profile, with nothing reaching
// outside this machine.
import { after, before, test as nodeTest } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import { chromium } from 'playwright-core';

const test = (name, fn) => nodeTest(`browser: ${name}`, fn);

const ORIGIN = `http://localhost:${process.env.SPILLWAY_BROWSER_PORT}`;
const gateway = process.env.SPILLWAY_URL;
const here = fileURLToPath(new URL('.', import.meta.url));

// What the page imports, as one ES module: the SDKs on `window`.
const ENTRY = `
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, streamText, stepCountIs, tool, jsonSchema } from 'ai';
window.sdks = { OpenAI, Anthropic, createOpenAI, generateText, streamText, stepCountIs, tool, jsonSchema };
`;

let context;
let page;
let profile;
let server;
// Any request the browser refused for CORS.
const refused = [];

before(async () => {
  const bundle = await esbuild.build({
    stdin: { contents: ENTRY, resolveDir: here, loader: 'js' },
    bundle: true,
    format: 'esm',
    platform: 'browser',
    write: false,
    logLevel: 'silent',
  });
  const script = bundle.outputFiles[0].text;
  profile = mkdtempSync(join(tmpdir(), 'spillway-chromium-'));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
  // The page's origin: this process serves the page and the bundle.
  server = createServer((req, res) => {
    if (req.url === '/sdks.js') {
      res.writeHead(200, { 'content-type': 'text/javascript' });
      return res.end(script);
    }
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<!doctype html><title>app</title><script type="module" src="/sdks.js"></script>');
  });
  await new Promise((resolve) => server.listen(Number(process.env.SPILLWAY_BROWSER_PORT), '127.0.0.1', resolve));
  page = context.pages()[0] ?? (await context.newPage());
  page.on('console', (m) => {
    if (m.type() === 'error' && /CORS|Access-Control/.test(m.text())) refused.push(m.text());
  });
  await page.goto(`${ORIGIN}/`);
  await page.waitForFunction(() => window.sdks !== undefined, null, { timeout: 30_000 });
});

after(async () => {
  await context?.close();
  server?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

/// Runs `fn(sdks, gateway)` in the page; its JSON result.
const inPage = (fn) => page.evaluate(`(${fn})(window.sdks, ${JSON.stringify(gateway)})`);

test('openai-node with dangerouslyAllowBrowser: chat, stream, responses', async () => {
  const out = await inPage(async ({ OpenAI }, base) => {
    const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'browser-key', dangerouslyAllowBrowser: true, maxRetries: 0 });
    const chat = await client.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'Hi' }] });
    const stream = await client.chat.completions.create({
      model: 'chat',
      messages: [{ role: 'user', content: 'Hi' }],
      stream: true,
    });
    let streamed = '';
    for await (const c of stream) streamed += c.choices[0]?.delta?.content ?? '';
    const { data, response } = await client.chat.completions
      .create({ model: 'chat', messages: [{ role: 'user', content: 'Hi' }] })
      .withResponse();
    const resp = await client.responses.create({ model: 'chat', input: 'Hi', store: false });
    return {
      chat: chat.choices[0].message.content,
      streamed,
      model: response.headers.get('x-spillway-model'),
      id: data.id,
      responses: resp.output_text,
    };
  });
  assert.ok(out.chat && out.streamed && out.responses, JSON.stringify(out));
  assert.equal(out.model, 'mock/steady', 'the gateway headers are readable cross-origin');
  assert.deepEqual(refused, []);
  // The control: a header the gateway does not allow is refused by this
  // browser's preflight, so the SDKs' requests above passed one.
  const control = await inPage(async (_, base) => {
    try {
      await fetch(`${base}/v1/models`, { headers: { 'x-not-allowed': '1' } });
      return 'allowed';
    } catch (e) {
      return 'refused';
    }
  });
  assert.equal(control, 'refused');
  refused.length = 0;
});

test('Anthropic TypeScript SDK with dangerouslyAllowBrowser: messages, stream', async () => {
  const out = await inPage(async ({ Anthropic }, base) => {
    const client = new Anthropic({ baseURL: base, apiKey: 'browser-key', dangerouslyAllowBrowser: true, maxRetries: 0 });
    const msg = await client.messages.create({
      model: 'chat',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'Hi' }],
    });
    const stream = client.messages.stream({ model: 'chat', max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }] });
    const final = await stream.finalMessage();
    return { text: msg.content[0].text, streamed: final.content[0].text, stop: final.stop_reason };
  });
  assert.ok(out.text && out.streamed, JSON.stringify(out));
  assert.equal(out.stop, 'end_turn');
  assert.deepEqual(refused, []);
});

test('AI SDK in a page: generateText and streamText with tools, Responses and chat', async () => {
  const out = await inPage(async ({ createOpenAI, generateText, streamText, stepCountIs, tool, jsonSchema }, base) => {
    const openai = createOpenAI({ baseURL: `${base}/v1`, apiKey: 'browser-key' });
    const results = {};
    for (const [label, model] of [
      ['responses', openai('chat')],
      ['chat', openai.chat('chat')],
    ]) {
      const { text } = await generateText({ model, prompt: 'Say hello.', maxRetries: 0 });
      let calls = 0;
      const streamed = streamText({
        model,
        prompt: 'Weather in Paris?',
        maxRetries: 0,
        stopWhen: stepCountIs(3),
        tools: {
          weather: tool({
            description: 'The weather in a city.',
            inputSchema: jsonSchema({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }),
            execute: async ({ city }) => {
              calls += 1;
              return { city, celsius: 12 };
            },
          }),
        },
      });
      let answer = '';
      for await (const part of streamed.textStream) answer += part;
      results[label] = { text, answer, calls };
    }
    return results;
  });
  for (const label of ['responses', 'chat']) {
    assert.ok(out[label].text, `${label}: ${JSON.stringify(out)}`);
    assert.ok(out[label].answer, `${label}: ${JSON.stringify(out)}`);
    assert.equal(out[label].calls, 1, label);
  }
  assert.deepEqual(refused, []);
});
