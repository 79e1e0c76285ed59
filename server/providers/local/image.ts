// The local provider's image generation: a small deterministic PNG drawn from the prompt, so
// the image path works offline and tests can compare bytes. Not a picture of the prompt: a
// 64×64 pattern whose colours and bands come from the prompt's hash (same prompt, same PNG).
import { createHash } from 'node:crypto';
import { crc32, deflateSync } from 'node:zlib';

const SIZE = 64;
const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

export function drawPromptPng(prompt: string): Buffer {
  const seed = createHash('sha256').update(prompt).digest();
  const [r, g, b] = [seed[0], seed[1], seed[2]];
  const [r2, g2, b2] = [seed[3], seed[4], seed[5]];
  const band = 4 + (seed[6] % 12);
  // Raw scanlines: a filter byte (0: none) then RGB triples.
  const raw = Buffer.alloc(SIZE * (1 + SIZE * 3));
  for (let y = 0; y < SIZE; y++) {
    const row = y * (1 + SIZE * 3);
    for (let x = 0; x < SIZE; x++) {
      const stripe = Math.floor((x + (seed[7] % 2 ? y : SIZE - y)) / band) % 2 === 0;
      const at = row + 1 + x * 3;
      raw[at] = stripe ? r : r2;
      raw[at + 1] = stripe ? g : g2;
      raw[at + 2] = stripe ? b : b2;
    }
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(SIZE, 0);
  header.writeUInt32BE(SIZE, 4);
  header[8] = 8; // bit depth
  header[9] = 2; // colour type: truecolour RGB
  return Buffer.concat([SIGNATURE, chunk('IHDR', header), chunk('IDAT', deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
}

function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}
