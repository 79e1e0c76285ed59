import { Platform } from '@inference-platform/sdk';

// `npm run mock` serves every operation from the contract's examples (streams included)
// on one port for both APIs: point both base URLs at it.
const mockUrl = process.env.MOCK_URL ?? 'http://127.0.0.1:4010';
const platform = new Platform({ apiKey: 'sk_mock', baseUrl: mockUrl, managementBaseUrl: mockUrl });

const stream = await platform.chat.completions.create({ auto_routing: true, stream: true, messages: [{ role: 'user', content: 'What is hope?' }] });
console.log(await stream.finalText());
