// Which image URLs a request may hand to an upstream. Some upstreams fetch what they are
// given (vLLM does, from its own network), so a URL is a request the platform makes on the
// caller's behalf: only `https:` and base64 `data:image/…` URLs pass, and an https host
// that is loopback, private or link-local is refused unless the gateway config allows it.
// Hosts are judged after the WHATWG URL parser has normalised them, so IPv4 literals in
// disguise (2130706433, 0x7f.1, 0177.0.0.1, 127.1, %31%32%37.0.0.1) and IPv4 inside IPv6
// ([::ffff:127.0.0.1], [::127.0.0.1], NAT64, 6to4) are seen as the address they name.
// Names are not resolved: the gateway does not fetch the image, and a lookup per request
// would cost and could be rebound anyway; names reserved for local use are refused.
import { BlockList, isIP } from 'node:net';
import { ApiError } from '../errors.js';
import type { ChatMessage } from '../providers/types.js';

const DATA_IMAGE = /^data:image\/[\w.+-]+;base64,/i;
const HTTPS = /^https:\/\//i;

/** Why `url` is not an https or base64 data:image URL, or undefined when it is one. */
export function unsafeScheme(url: string): string | undefined {
  if (DATA_IMAGE.test(url) || HTTPS.test(url)) return undefined;
  return 'image_url must be an https:// URL or a base64 data:image/… URL.';
}

const PRIVATE = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8], // "this network": 0.0.0.0 reaches the local host
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, where cloud metadata services answer
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
] as const) {
  // IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) match these rules too.
  PRIVATE.addSubnet(net, bits, 'ipv4');
}
for (const [net, bits] of [
  ['::', 96], // unspecified, loopback (::1) and IPv4-compatible (::a.b.c.d)
  ['::ffff:0:0:0', 96], // IPv4-translated
  ['64:ff9b::', 96], // NAT64: an IPv4 address behind a translator
  ['64:ff9b:1::', 48],
  ['2002::', 16], // 6to4: an IPv4 address in bits 16-48
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
] as const) {
  PRIVATE.addSubnet(net, bits, 'ipv6');
}

/** Top-level names reserved for local use (RFC 6761, 6762, 8375; ICANN's .internal). */
const LOCAL_NAMES = /(^|\.)(localhost|local|internal|home\.arpa)$/i;

export interface ImageUrlConfig {
  /** Let image URLs name loopback, private and link-local hosts (an upstream fetching inside a private network). */
  allow_private_hosts: boolean;
  /** Hosts (names or addresses) allowed even though they are private. */
  allow_hosts: string[];
}

export class ImageUrlPolicy {
  private readonly allowed: ReadonlySet<string>;

  constructor(private readonly config: ImageUrlConfig) {
    this.allowed = new Set(config.allow_hosts.map((host) => hostOf(`https://${host}/`) ?? host.toLowerCase()));
  }

  /** Why `url` may not reach an upstream, or undefined when it may. */
  refusal(url: string): string | undefined {
    const scheme = unsafeScheme(url);
    if (scheme || DATA_IMAGE.test(url) || this.config.allow_private_hosts) return scheme;
    const host = hostOf(url);
    if (host === undefined) return 'image_url is not a valid URL.';
    if (this.allowed.has(host)) return undefined;
    const family = isIP(host);
    if (LOCAL_NAMES.test(host) || (family !== 0 && PRIVATE.check(host, family === 6 ? 'ipv6' : 'ipv4'))) {
      return `image_url names a loopback, private or link-local host (${host}); only public hosts are fetched.`;
    }
    return undefined;
  }

  /** Refuses (400 INVALID_REQUEST, naming the part) the first image of `messages` that may not reach an upstream. */
  check(messages: readonly ChatMessage[], param: (message: number, part: number) => string): void {
    for (let i = 0; i < messages.length; i++) {
      const content = messages[i].content;
      if (!Array.isArray(content)) continue;
      for (let j = 0; j < content.length; j++) {
        const part = content[j];
        if (part.type !== 'image_url') continue;
        const problem = this.refusal(part.image_url.url);
        if (problem) throw new ApiError('INVALID_REQUEST', problem, { param: param(i, j) });
      }
    }
  }
}

/** The URL's host as the WHATWG parser normalises it (IPv6 without brackets, no trailing dot), or undefined. */
function hostOf(url: string): string | undefined {
  let hostname: string;
  try {
    hostname = new URL(url).hostname;
  } catch {
    return undefined;
  }
  if (hostname.startsWith('[')) return hostname.slice(1, -1);
  return hostname.replace(/\.+$/, '');
}
