// Upload file names (server/http/file-name.ts): control and bidirectional characters
// removed, cut to 255 bytes of UTF-8 with the extension kept, never inside a character.
import { describe, expect, it } from 'vitest';
import { cleanFileName, FILE_NAME_MAX_BYTES } from '../../server/http/file-name.js';

const bytes = (text: string) => Buffer.byteLength(text);

describe('cleanFileName', () => {
  it('keeps an ordinary name, accents and spaces included', () => {
    expect(cleanFileName('Sabbath rest – été 2024.pdf')).toBe('Sabbath rest – été 2024.pdf');
  });

  it('removes bidirectional overrides, embeddings, isolates and marks', () => {
    // Displayed right to left after the override, it reads "reportexe.pdf".
    expect(cleanFileName('report\u202Efdp.exe')).toBe('reportfdp.exe');
    const bidi = '\u202A\u202B\u202C\u202D\u202E\u2066\u2067\u2068\u2069\u200E\u200F\u061C';
    expect(cleanFileName(`a${bidi}b.txt`)).toBe('ab.txt');
  });

  it('removes C0 and C1 controls, DEL and line separators', () => {
    expect(cleanFileName('line\nbreak\r\t\u0000\u0007\u001b[31m\u007f\u0085\u009f\u2028\u2029.md')).toBe('linebreak[31m.md');
  });

  it('cuts a 5,000-character name to 255 bytes, keeping its extension', () => {
    const name = cleanFileName(`${'a'.repeat(5_000)}.pdf`);
    expect(bytes(name)).toBe(FILE_NAME_MAX_BYTES);
    expect(name).toBe(`${'a'.repeat(FILE_NAME_MAX_BYTES - 4)}.pdf`);
  });

  it('cuts between whole characters of a multi-byte name', () => {
    for (const unit of ['é', '\u{1F64F}', 'e\u0301', '\u{1F468}\u200D\u{1F469}\u200D\u{1F467}']) {
      const name = cleanFileName(`${unit.repeat(300)}.docx`);
      expect(bytes(name), unit).toBeLessThanOrEqual(FILE_NAME_MAX_BYTES);
      expect(name.endsWith('.docx'), unit).toBe(true);
      const stem = name.slice(0, -'.docx'.length);
      expect(stem.length % unit.length, unit).toBe(0);
      expect(stem, unit).toBe(unit.repeat(stem.length / unit.length));
    }
  });

  it('does not keep a long tail after the last dot as an extension', () => {
    const name = cleanFileName(`report.${'x'.repeat(1_000)}`);
    expect(bytes(name)).toBe(FILE_NAME_MAX_BYTES);
    expect(name.startsWith('report.xxx')).toBe(true);
  });
});
