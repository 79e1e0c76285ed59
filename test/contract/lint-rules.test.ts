// The project's Spectral rules catch what they are for: each is run on a small document
// that breaks it once and keeps it once, so a rule that can no longer fail is noticed.
// (openapi.yaml itself is linted by `npm run lint:api`.)
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';

const RULESET = new URL('../../.spectral.yaml', import.meta.url).pathname;
const SPECTRAL = new URL('../../node_modules/.bin/spectral', import.meta.url).pathname;

const errorBody = {
  description: 'Error.',
  content: {
    'application/json': {
      schema: { type: 'object', required: ['trace_id'], properties: { trace_id: { type: 'string', description: 'Trace.' } } },
      examples: { not_found: { value: { trace_id: 'trc_1' } } },
    },
  },
};

const operation = (operationId: string, extra: object) => ({
  operationId,
  tags: ['things'],
  summary: operationId,
  description: operationId,
  ...extra,
});

/** An event schema whose `name` property is required and always `value`. */
const eventSchema = (name: string, value: string) => ({
  type: 'object',
  required: [name],
  properties: { [name]: { const: value, description: 'What the event is.' } },
});
const schemaRef = (name: string) => ({ $ref: `#/components/schemas/${name}` });
/** A text/event-stream answer whose events are `schema`. */
const stream = (schema: object) => ({
  description: 'Events.',
  content: { 'text/event-stream': { schema, examples: { ok: { value: 'data: {}\n\n' } } } },
});

const stringArray = (extra: object = {}) => ({ type: 'array', description: 'Names.', items: { type: 'string' }, ...extra });

/** One operation per rule case; its operationId says whether the rule must fire on it. */
const document = {
  openapi: '3.1.0',
  info: { title: 'Lint fixture', version: '1', description: 'Fixture.', contact: { name: 'x' } },
  servers: [{ url: 'https://example.com' }],
  components: {
    schemas: {
      Shared: { type: 'object', additionalProperties: false, properties: { a: { type: 'string', description: 'First value.' } } },
      AnswerOnly: { type: 'object', additionalProperties: false, properties: { b: { type: 'string', description: 'Second value.' } } },
      EchoResponse: {
        type: 'object',
        properties: {
          item_tags: { type: 'array', maxItems: 5, description: 'Tags.', items: { type: 'string' } },
          data: { $ref: '#/components/schemas/Shared', description: 'The shared record.' },
          echo: { type: 'string', description: 'The echo.' },
          author: { type: 'string', description: "Names of the document's authors, shown with its search hits." },
        },
      },
      EventA: eventSchema('type', 'a'),
      EventB: eventSchema('type', 'b'),
      EventC: eventSchema('type', 'c'),
      ChunkX: eventSchema('object', 'chunk'),
      ChunkY: eventSchema('object', 'chunk'),
      Discriminated: { oneOf: [schemaRef('EventA'), schemaRef('EventB')], discriminator: { propertyName: 'type', mapping: { a: '#/components/schemas/EventA', b: '#/components/schemas/EventB' } } },
      MissingEntry: {
        oneOf: [schemaRef('EventA'), schemaRef('EventB'), schemaRef('EventC')],
        discriminator: { propertyName: 'type', mapping: { a: '#/components/schemas/EventA', b: '#/components/schemas/EventB' } },
      },
      NoDiscriminator: { anyOf: [schemaRef('EventA'), schemaRef('EventB')] },
      Undiscriminable: { anyOf: [schemaRef('ChunkX'), schemaRef('ChunkY')] },
    },
    responses: { SharedStream: stream(schemaRef('NoDiscriminator')) },
  },
  tags: [{ name: 'things', description: 'Things.' }],
  paths: {
    '/unbounded': {
      post: operation('unboundedArrays', {
        parameters: [{ name: 'ids', in: 'query', description: 'Ids.', schema: stringArray() }],
        requestBody: {
          content: {
            'application/json': {
              schema: { type: 'object', properties: { names: stringArray(), nested: { type: 'object', description: 'N.', properties: { deep: stringArray() } } } },
            },
          },
        },
        responses: { '204': { description: 'Done.' }, '404': errorBody },
      }),
    },
    '/examples': {
      get: operation('bareExamples', {
        responses: {
          '200': {
            description: 'Both.',
            content: {
              'application/json': { schema: { type: 'object' }, example: { a: 1 }, examples: { ok: { value: { a: 1 } } } },
              'text/event-stream': { schema: { type: 'object' }, example: 'data: {}\n\n' },
            },
          },
          '404': { ...errorBody, content: { 'application/json': { schema: errorBody.content['application/json'].schema, example: { trace_id: 'trc_1' } } } },
        },
      }),
    },
    '/closed': {
      post: operation('closedSchemas', {
        requestBody: { content: { 'application/json': { schema: { $ref: '#/components/schemas/Shared' } } } },
        responses: {
          '200': {
            description: 'Answer.',
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  properties: { shared: { $ref: '#/components/schemas/Shared' }, only: { $ref: '#/components/schemas/AnswerOnly' }, inline: { type: 'object', description: 'I.', additionalProperties: false } },
                },
                examples: { ok: { value: {} } },
              },
            },
          },
          '404': errorBody,
        },
      }),
    },
    '/events': {
      get: operation('eventStreams', {
        responses: {
          '200': stream(schemaRef('Discriminated')),
          '201': stream(schemaRef('MissingEntry')),
          '202': { $ref: '#/components/responses/SharedStream' },
          '203': stream(schemaRef('Undiscriminable')),
          '404': errorBody,
        },
      }),
    },
    '/bounded': {
      post: operation('boundedArrays', {
        parameters: [{ name: 'ids', in: 'query', description: 'Ids.', schema: stringArray({ maxItems: 10 }) }],
        requestBody: { content: { 'application/json': { schema: { type: 'object', properties: { names: stringArray({ maxItems: 10 }) } } } } },
        responses: { '204': { description: 'Done.' }, '404': errorBody },
      }),
    },
  },
};

interface Result {
  code: string;
  path: string[];
  message: string;
}

let results: Result[] = [];
let dir: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'lint-rules-'));
  const file = join(dir, 'fixture.yaml');
  writeFileSync(file, stringify(document));
  // Exit code 1 when anything is found: the JSON report is what matters.
  const run = await promisify(execFile)(SPECTRAL, ['lint', file, '--ruleset', RULESET, '--format', 'json', '--quiet'], { maxBuffer: 1 << 24 }).catch(
    (error: { stdout: string }) => error,
  );
  results = JSON.parse(run.stdout) as Result[];
}, 60_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const firing = (code: string) => results.filter((r) => r.code === code).map((r) => r.path.join('.'));

describe('project Spectral rules', () => {
  it('platform-property-description: a description that only repeats the property, schema or $ref name', () => {
    expect(firing('platform-property-description').filter((p) => p.endsWith('.description')).sort()).toEqual([
      'components.schemas.EchoResponse.properties.data.description',
      'components.schemas.EchoResponse.properties.echo.description',
      'components.schemas.EchoResponse.properties.item_tags.description',
    ]);
  });

  it('platform-responses-open: additionalProperties false on a schema only responses reach, not on one a request shares', () => {
    expect(firing('platform-responses-open').sort()).toEqual([
      'components.schemas.AnswerOnly.additionalProperties',
      'paths./closed.post.responses.200.content.application/json.schema.properties.inline.additionalProperties',
    ]);
  });

  it('platform-response-named-examples: a bare example (alone or beside examples, JSON or SSE) on any response', () => {
    expect(firing('platform-response-named-examples').sort()).toEqual([
      'paths./examples.get.responses.200.content.application/json',
      'paths./examples.get.responses.200.content.text/event-stream',
      'paths./examples.get.responses.404.content.application/json',
    ]);
  });

  it('platform-stream-event-discriminator: a union of events one property tells apart, without its discriminator or a mapping entry', () => {
    expect(firing('platform-stream-event-discriminator').sort()).toEqual(['components.schemas.MissingEntry.discriminator.mapping', 'components.schemas.NoDiscriminator']);
  });

  it('platform-request-array-max-items: every request array, body or parameter, nested or not', () => {
    const paths = firing('platform-request-array-max-items');
    expect(paths).toEqual(
      expect.arrayContaining([
        expect.stringContaining('/unbounded.post.parameters.0.schema'),
        expect.stringMatching(/\/unbounded\.post\.requestBody.*properties\.names$/),
        expect.stringMatching(/\/unbounded\.post\.requestBody.*properties\.deep$/),
      ]),
    );
    expect(paths).toHaveLength(3);
  });
});
