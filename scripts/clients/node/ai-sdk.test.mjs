// The Vercel AI SDK against Spillway: the default provider `openai(id)`
// (the Responses API), `openai.chat(id)`, generateObject, streamText, tools
// run to an answer, embed / embedMany.
import { test as nodeTest } from 'node:test';
import assert from 'node:assert/strict';
import { createOpenAI } from '@ai-sdk/openai';
import { APICallError, embed, embedMany, generateObject, generateText, stepCountIs, streamObject, streamText, tool } from 'ai';
import { z } from 'zod';

// Scenario names carry the client's name (run.sh's summary shows it).
const test = (name, fn) => nodeTest(`ai-sdk: ${name}`, fn);

const openai = createOpenAI({ baseURL: `${process.env.SPILLWAY_URL}/v1`, apiKey: 'not-needed' });

const Person = z.object({
  name: z.string(),
  age: z.number(),
  nickname: z.string().optional(),
  address: z.object({ city: z.string(), zip: z.string().nullable() }),
  tags: z.array(z.string()),
});

for (const [label, model] of [
  ['openai(id), Responses API', () => openai('chat')],
  ['openai.chat(id)', () => openai.chat('chat')],
]) {
  test(`generateText, ${label}`, async () => {
    const { text, finishReason, usage } = await generateText({ model: model(), prompt: 'Say hello.', maxRetries: 0 });
    assert.ok(text);
    assert.equal(finishReason, 'stop');
    assert.ok(usage.outputTokens > 0);
  });

  test(`generateObject, ${label}`, async () => {
    for (const cascade of ['chat', 'renamed']) {
      const m = label.startsWith('openai(') ? openai(cascade) : openai.chat(cascade);
      const { object } = await generateObject({ model: m, schema: Person, prompt: 'Invent a person.', maxRetries: 0 });
      Person.parse(object);
    }
  });

  test(`streamText, ${label}`, async () => {
    const result = streamText({ model: model(), prompt: 'Say hello.', maxRetries: 0 });
    let text = '';
    for await (const part of result.textStream) text += part;
    assert.ok(text);
    assert.equal(await result.finishReason, 'stop');
  });

  test(`tools to an answer, ${label}`, async () => {
    let calls = 0;
    const { text, steps } = await generateText({
      model: model(),
      prompt: 'Weather in Paris?',
      maxRetries: 0,
      stopWhen: stepCountIs(3),
      tools: {
        weather: tool({
          description: 'The weather in a city.',
          inputSchema: z.object({ city: z.string(), unit: z.enum(['c', 'f']).optional() }),
          execute: async ({ city }) => {
            calls += 1;
            return { city, celsius: 12 };
          },
        }),
      },
    });
    assert.equal(calls, 1);
    assert.equal(steps.length, 2);
    assert.ok(text);
  });

  test(`streamText with tools, ${label}`, async () => {
    let calls = 0;
    const result = streamText({
      model: model(),
      prompt: 'Weather in Paris?',
      maxRetries: 0,
      stopWhen: stepCountIs(3),
      tools: {
        weather: tool({
          inputSchema: z.object({ city: z.string() }),
          execute: async () => {
            calls += 1;
            return '12 C';
          },
        }),
      },
    });
    let text = '';
    for await (const part of result.textStream) text += part;
    assert.equal(calls, 1);
    assert.ok(text);
  });
}

test('streamObject, openai(id)', async () => {
  const result = streamObject({ model: openai('renamed'), schema: Person, prompt: 'Invent a person.', maxRetries: 0 });
  for await (const _ of result.partialObjectStream) {
    // drain
  }
  Person.parse(await result.object);
});

test('embed and embedMany', async () => {
  const { embedding } = await embed({ model: openai.embedding('embeddings'), value: 'one', maxRetries: 0 });
  assert.equal(embedding.length, 64);
  const { embeddings } = await embedMany({ model: openai.embedding('embeddings'), values: ['one', 'two'], maxRetries: 0 });
  assert.equal(embeddings.length, 2);
  assert.deepEqual(embeddings[0], embedding);
});

// A chat app's next turn: the history is the earlier result's messages.
const weatherTools = {
  weather: tool({ inputSchema: z.object({ city: z.string() }), execute: async () => '12 C' }),
};

test('next turn from response.messages, openai(id) with store: false', async () => {
  const providerOptions = { openai: { store: false } };
  const first = await generateText({
    model: openai('chat'),
    prompt: 'Weather in Paris?',
    tools: weatherTools,
    stopWhen: stepCountIs(3),
    maxRetries: 0,
    providerOptions,
  });
  const next = streamText({
    model: openai('chat'),
    messages: [{ role: 'user', content: 'Weather in Paris?' }, ...first.response.messages, { role: 'user', content: 'Thanks!' }],
    tools: weatherTools,
    stopWhen: stepCountIs(3),
    maxRetries: 0,
    providerOptions,
  });
  let text = '';
  for await (const part of next.textStream) text += part;
  // The mock answers the last user message, which the next turn carried.
  assert.ok(text.endsWith('Thanks!'), text);
});

// The AI SDK's default (store unset = true): the next turn names the earlier
// assistant items by id (`item_reference`), which Spillway resolves from the
// responses it stored. Every request body is recorded to see that it did.
const sent = [];
const recording = createOpenAI({
  baseURL: `${process.env.SPILLWAY_URL}/v1`,
  apiKey: 'not-needed',
  fetch: async (url, init) => {
    if (init?.body) sent.push(JSON.parse(init.body));
    return fetch(url, init);
  },
});
const references = () => sent.flatMap((b) => (Array.isArray(b.input) ? b.input : [])).filter((i) => i.type === 'item_reference' || (i.id && !i.type && !i.role));

test('default multi-turn on stored responses: text, whole and streamed', async () => {
  sent.length = 0;
  const first = await generateText({ model: recording('chat'), prompt: 'Say hello.', maxRetries: 0 });
  const history = [{ role: 'user', content: 'Say hello.' }, ...first.response.messages];
  const second = await generateText({
    model: recording('chat'),
    messages: [...history, { role: 'user', content: 'Again.' }],
    maxRetries: 0,
  });
  assert.ok(second.text.endsWith('Again.'), second.text);
  const third = streamText({
    model: recording('chat'),
    messages: [...history, ...second.response.messages, { role: 'user', content: 'Once more.' }],
    maxRetries: 0,
  });
  let text = '';
  for await (const part of third.textStream) text += part;
  assert.ok(text.endsWith('Once more.'), text);
  assert.ok(references().length >= 2, `the SDK sent item references: ${JSON.stringify(sent.map((b) => b.input))}`);
});

test('default multi-turn on stored responses: tools, whole and streamed', async () => {
  sent.length = 0;
  const first = await generateText({
    model: recording('chat'),
    prompt: 'Weather in Paris?',
    tools: weatherTools,
    stopWhen: stepCountIs(3),
    maxRetries: 0,
  });
  assert.equal(first.steps.length, 2);
  const next = streamText({
    model: recording('chat'),
    messages: [{ role: 'user', content: 'Weather in Paris?' }, ...first.response.messages, { role: 'user', content: 'Thanks!' }],
    tools: weatherTools,
    stopWhen: stepCountIs(3),
    maxRetries: 0,
  });
  let text = '';
  for await (const part of next.textStream) text += part;
  assert.ok(text.endsWith('Thanks!'), text);
  // The earlier turns' items went back by reference.
  assert.ok(references().length > 0, JSON.stringify(references()));
});

test('errors: an unknown model is a 404 APICallError', async () => {
  await assert.rejects(
    generateText({ model: openai('no-such-cascade'), prompt: 'x', maxRetries: 0 }),
    (e) => APICallError.isInstance(e) && e.statusCode === 404 && e.message.includes('no-such-cascade'),
  );
});

test('the demo config: streamText through the rate-limited free model and spill-over, generateObject on extraction', async () => {
  const demo = createOpenAI({ baseURL: `${process.env.SPILLWAY_DEMO_URL}/v1`, apiKey: 'not-needed' });
  for (let i = 0; i < 4; i++) {
    const result = streamText({ model: demo('chat'), prompt: 'Say hello.', maxRetries: 0 });
    let text = '';
    for await (const part of result.textStream) text += part;
    assert.ok(text);
  }
  const { object } = await generateObject({
    model: demo('extraction'),
    schema: z.object({ title: z.string(), tags: z.array(z.string()), year: z.number().nullable() }),
    prompt: 'Extract.',
    maxRetries: 0,
  });
  assert.equal(typeof object.title, 'string');
});

test('all models failed: a retryable 503 APICallError, generate and stream', async () => {
  await assert.rejects(
    generateText({ model: openai('all-down'), prompt: 'x', maxRetries: 0 }),
    (e) => APICallError.isInstance(e) && e.statusCode === 503 && e.isRetryable,
  );
  const errors = [];
  const result = streamText({ model: openai.chat('all-down'), prompt: 'x', maxRetries: 0, onError: ({ error }) => errors.push(error) });
  for await (const _ of result.textStream) {
    // drain
  }
  assert.ok(errors.length === 1 && APICallError.isInstance(errors[0]) && errors[0].statusCode === 503, String(errors[0]));
});

test('tool choice, generateObject output modes, embedding dimensions', async () => {
  const forced = await generateText({
    model: openai('chat'),
    prompt: 'x',
    maxRetries: 0,
    toolChoice: { type: 'tool', toolName: 'second' },
    tools: {
      first: tool({ inputSchema: z.object({ a: z.string() }) }),
      second: tool({ inputSchema: z.object({ b: z.number() }) }),
    },
  });
  assert.equal(forced.toolCalls[0].toolName, 'second');
  const { object: list } = await generateObject({
    model: openai('renamed'),
    output: 'array',
    schema: z.object({ name: z.string(), score: z.number().nullable() }),
    prompt: 'List.',
    maxRetries: 0,
  });
  assert.ok(Array.isArray(list));
  const { object: choice } = await generateObject({
    model: openai('chat'),
    output: 'enum',
    enum: ['red', 'green'],
    prompt: 'Pick.',
    maxRetries: 0,
  });
  assert.ok(['red', 'green'].includes(choice));
  const { embedding } = await embed({
    model: openai.embedding('embeddings'),
    value: 'one',
    maxRetries: 0,
    providerOptions: { openai: { dimensions: 16 } },
  });
  assert.equal(embedding.length, 16);
});
