// The contract loads in YAML 1.1 parsers (SnakeYAML, PyYAML), not only in YAML 1.2 ones.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { yaml11Problems } from '../../scripts/check-yaml11.js';

describe('openapi.yaml as YAML 1.1', () => {
  it('parses strictly, with nothing YAML 1.1 parsers reject', () => {
    expect(yaml11Problems(readFileSync(new URL('../../openapi.yaml', import.meta.url), 'utf8'))).toEqual([]);
  });

  it('would catch an unquoted "?" in a flow collection, as the contract once had', () => {
    const unquoted = ['input: [What does grace mean?, Sabbath rest]', 'messages:\n  - {role: user, content: Why rest?}'];
    for (const text of unquoted) expect(yaml11Problems(text), text).toEqual([expect.stringMatching(/unquoted "\?"/)]);
    expect(yaml11Problems("input: ['What does grace mean?', Sabbath rest]\nkey: What? is fine outside flow")).toEqual([]);
    expect(yaml11Problems('a: 1\na: 2')).not.toEqual([]); // duplicate keys
  });
});
