// Which image URLs may reach an upstream (server/gateway/image-urls.ts), and what the config
// allows; the end-to-end refusals are in unsafe-input.test.ts.
import { describe, expect, it } from 'vitest';
import { ImageUrlPolicy, unsafeScheme } from '../../server/gateway/image-urls.js';
import { Redactor } from '../../server/providers/redact.js';
import { BAD_SCHEMES, PRIVATE_URLS } from './support.js';

const strict = new ImageUrlPolicy({ allow_private_hosts: false, allow_hosts: [] });

describe('ImageUrlPolicy', () => {
  it.each(PRIVATE_URLS)('refuses %s', (url) => {
    expect(strict.refusal(url)).toMatch(/loopback, private or link-local/);
  });

  it.each(BAD_SCHEMES)('refuses the scheme of %s', (url) => {
    expect(strict.refusal(url)).toMatch(/https:\/\/ URL or a base64 data:image/);
    expect(unsafeScheme(url)).toBeDefined();
  });

  it.each([
    'https://example.com/cat.png',
    'https://8.8.8.8/cat.png',
    'https://172.32.0.1/cat.png', // just past 172.16/12
    'https://[2606:4700:4700::1111]/cat.png',
    'https://[::ffff:8.8.8.8]/cat.png',
    'https://localhost.example.com/cat.png',
    'HTTPS://EXAMPLE.COM/cat.png',
    'data:image/png;base64,iVBORw0KGgo=',
  ])('accepts %s', (url) => {
    expect(strict.refusal(url)).toBeUndefined();
  });

  it('lets the config allow private hosts, all of them or by name and address', () => {
    const all = new ImageUrlPolicy({ allow_private_hosts: true, allow_hosts: [] });
    for (const url of PRIVATE_URLS) expect(all.refusal(url)).toBeUndefined();
    // The scheme rule holds whatever the hosts allowed.
    for (const url of BAD_SCHEMES) expect(all.refusal(url)).toBeDefined();

    const some = new ImageUrlPolicy({ allow_private_hosts: false, allow_hosts: ['10.1.2.3', 'Images.Internal', '::1'] });
    expect(some.refusal('https://10.1.2.3/cat.png')).toBeUndefined();
    expect(some.refusal('https://images.internal./cat.png')).toBeUndefined();
    expect(some.refusal('https://[::1]:8443/cat.png')).toBeUndefined();
    // An allowed address is matched as the parser normalises it: 10.1.2.3 written in hex too.
    expect(some.refusal('https://0x0a010203/cat.png')).toBeUndefined();
    expect(some.refusal('https://10.1.2.4/cat.png')).toBeDefined();
    expect(some.refusal('https://127.0.0.1/cat.png')).toBeDefined();
  });

  it('names the part it refuses', () => {
    const messages = [
      { role: 'user' as const, content: 'hello' },
      { role: 'user' as const, content: [{ type: 'text' as const, text: 'look' }, { type: 'image_url' as const, image_url: { url: 'https://127.1/' } }] },
    ];
    expect(() => strict.check(messages, (i, j) => `messages[${i}].content[${j}]`)).toThrow(
      expect.objectContaining({ errorName: 'INVALID_REQUEST', options: expect.objectContaining({ param: 'messages[1].content[1]' }) }),
    );
  });
});

describe('Redactor', () => {
  it('takes out the configured keys and anything shaped like a credential', () => {
    const redact = new Redactor(['azure0123456789abcdef0123456789ab', undefined, 'short']);
    expect(redact.text('Incorrect API key provided: Bearer sk-proj-AbC123_xyz-789.')).toBe('Incorrect API key provided: Bearer [redacted].');
    expect(redact.text('key sk-ant-api03-AAAAAAAAAAAA invalid')).toBe('key [redacted] invalid');
    expect(redact.text('Access denied due to invalid subscription key azure0123456789abcdef0123456789ab.')).toBe(
      'Access denied due to invalid subscription key [redacted].',
    );
    expect(redact.text('authorization: bearer abc.def.ghi')).toBe('authorization: bearer [redacted]');
    expect(redact.text('gsk_0123456789abcdef and AIzaSyA0123456789abcdefghijklmnop')).toBe('[redacted] and [redacted]');
    // OpenAI's masked echo is a credential's shape too.
    expect(redact.text('Incorrect API key provided: sk-proj-****************abcd.')).toBe('Incorrect API key provided: [redacted].');
    // Ordinary text, and a key shorter than 8 characters (it would redact words), are left.
    expect(redact.text('Rate limit reached; short answers ask-me skills')).toBe('Rate limit reached; short answers ask-me skills');
  });
});
