// openai-node against Spillway: zodResponseFormat (draft-07 schemas with
// optional and nested fields), runTools, the Responses API (whole, streamed,
// zodTextFormat), streaming chat.
import { test as nodeTest } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { zodFunction, zodResponseFormat, zodTextFormat } from 'openai/helpers/zod';
import { z } from 'zod';

// Scenario names carry the client's name (run.sh's summary shows it).
const test = (name, fn) => nodeTest(`openai-node: ${name}`, fn);

const client = new OpenAI({ baseURL: `${process.env.SPILLWAY_URL}/v1`, apiKey: 'not-needed', maxRetries: 0 });

const Address = z.object({ street: z.string(), city: z.string(), zip: z.string().nullable() });
const Person = z.object({
  fullName: z.string(),
  age: z.number().int(),
  nickname: z.string().nullable(),
  role: z.enum(['admin', 'user']),
  address: Address,
  previous: z.array(Address),
});

for (const cascade of ['chat', 'renamed', 'fenced']) {
  test(`zodResponseFormat parse (${cascade})`, async () => {
    const completion = await client.chat.completions.parse({
      model: cascade,
      messages: [{ role: 'user', content: 'Invent a person.' }],
      response_format: zodResponseFormat(Person, 'person'),
    });
    const person = completion.choices[0].message.parsed;
    assert.ok(person, 'parsed is null');
    Person.parse(person);
  });
}

test('chat stream', async () => {
  const stream = await client.chat.completions.create({
    model: 'chat',
    messages: [{ role: 'user', content: 'Say hello.' }],
    stream: true,
  });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  assert.ok(text);
});

test('runTools with a zodFunction until the model answers', async () => {
  let calls = 0;
  const runner = client.chat.completions.runTools({
    model: 'chat',
    messages: [{ role: 'user', content: 'Weather in Paris?' }],
    tools: [
      zodFunction({
        name: 'getWeather',
        parameters: z.object({ city: z.string(), unit: z.enum(['c', 'f']).nullable() }),
        function: async ({ city }) => {
          calls += 1;
          return `12 C in ${city}`;
        },
      }),
    ],
  });
  const content = await runner.finalContent();
  assert.equal(calls, 1);
  assert.ok(content);
});

test('runTools streamed', async () => {
  let calls = 0;
  const runner = client.chat.completions.runTools({
    model: 'chat',
    stream: true,
    messages: [{ role: 'user', content: 'Weather in Paris?' }],
    tools: [
      {
        type: 'function',
        function: {
          name: 'get_weather',
          parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
          parse: JSON.parse,
          function: async (args) => {
            calls += 1;
            assert.equal(typeof args.city, 'string');
            return '12 C';
          },
        },
      },
    ],
  });
  const content = await runner.finalContent();
  assert.equal(calls, 1);
  assert.ok(content);
});

test('responses.create', async () => {
  const response = await client.responses.create({ model: 'chat', input: 'Say hello.', instructions: 'Be brief.' });
  assert.equal(response.status, 'completed');
  assert.ok(response.output_text);
});

test('responses stream', async () => {
  const stream = await client.responses.create({ model: 'chat', input: 'Say hello.', stream: true });
  const kinds = [];
  let text = '';
  for await (const event of stream) {
    kinds.push(event.type);
    if (event.type === 'response.output_text.delta') text += event.delta;
  }
  assert.equal(kinds[0], 'response.created');
  assert.equal(kinds.at(-1), 'response.completed');
  assert.ok(text);
});

test('responses.parse with zodTextFormat', async () => {
  const response = await client.responses.parse({
    model: 'renamed',
    input: 'Invent a person.',
    text: { format: zodTextFormat(Person, 'person') },
  });
  Person.parse(response.output_parsed);
});

test('embeddings (base64 by default)', async () => {
  const result = await client.embeddings.create({ model: 'embeddings', input: ['one', 'two'] });
  assert.equal(result.data.length, 2);
  assert.equal(result.data[0].embedding.length, 64);
});

test('all models failed: a 503 APIError, whole and streamed', async () => {
  for (const stream of [false, true]) {
    await assert.rejects(
      client.chat.completions.create({ model: 'all-down', messages: [{ role: 'user', content: 'x' }], stream }),
      (e) => e instanceof OpenAI.APIError && e.status === 503 && e.code === 'all_models_failed',
    );
  }
});

test('chat.completions.stream helper with tools', async () => {
  const stream = client.chat.completions.stream({
    model: 'chat',
    messages: [{ role: 'user', content: 'Weather?' }],
    tools: [zodFunction({ name: 'getWeather', parameters: z.object({ city: z.string() }) })],
    tool_choice: 'required',
  });
  const final = await stream.finalChatCompletion();
  const call = final.choices[0].message.tool_calls[0];
  assert.equal(call.function.name, 'getWeather');
  assert.equal(typeof call.function.parsed_arguments.city, 'string');
});

test('responses.stream helper with zodTextFormat', async () => {
  const stream = client.responses.stream({
    model: 'renamed',
    input: 'Invent a person.',
    text: { format: zodTextFormat(Person, 'person') },
  });
  const final = await stream.finalResponse();
  Person.parse(final.output_parsed);
});
