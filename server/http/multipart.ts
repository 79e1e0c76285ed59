// Multipart parsing for upload operations. File parts stream to temporary files (hashed with
// SHA-256 on the way), never into memory, so a request of 20 files of 50 MB costs a few
// buffers of RAM; the files are removed once the answer is sent. The validator's built-in
// uploader marks a lone file as a string even where the contract declares an array, so a
// single-file upload of `files` would fail validation; here each file field gets the shape
// the contract declares. File names are cleaned and cut here (file-name.ts).
import { createHash, randomUUID } from 'node:crypto';
import { createWriteStream, mkdirSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Request, RequestHandler } from 'express';
import multer from 'multer';
import type { RouteDefinition } from '../../generated/contract/routes.js';
import { ApiError } from '../errors.js';
import { processAlive } from '../storage/process-alive.js';
import { cleanFileName } from './file-name.js';
import { onResponseEnd } from './response-end.js';

export interface UploadLimits {
  fileSize: number;
  files: number;
  /** Where file parts are spooled while the request is handled. */
  directory: string;
}

/** What the storage engine adds to multer's file record. */
export interface SpooledFile {
  path: string;
  size: number;
  sha256: string;
}

/** Form fields are ids and flags: a megabyte each and a few dozen of them are plenty. */
const FIELD_LIMITS = { fieldSize: 1024 * 1024, fields: 50 };
/** busboy's limit on a field's name, in bytes (its default, stated so the message can say it). */
const FIELD_NAME_BYTES = 100;

/**
 * A limit multer enforced, as the contract's answer: a request with too much in it (files,
 * parts, fields, bytes) is 413; a malformed form (an overlong or missing field name, an
 * unexpected part) is 400.
 */
function limitError(error: multer.MulterError, limits: UploadLimits): ApiError {
  const tooLarge = (message: string) => new ApiError('PAYLOAD_TOO_LARGE', message);
  switch (error.code) {
    case 'LIMIT_FILE_SIZE':
      return tooLarge(`A file may be at most ${limits.fileSize} bytes`);
    case 'LIMIT_FILE_COUNT':
      return tooLarge(`An upload may carry at most ${limits.files} files`);
    case 'LIMIT_FIELD_COUNT':
      return tooLarge(`An upload may carry at most ${FIELD_LIMITS.fields} form fields besides its files`);
    case 'LIMIT_FIELD_VALUE':
      return tooLarge(`A form field${error.field ? ` (${error.field})` : ''} may be at most ${FIELD_LIMITS.fieldSize} bytes`);
    case 'LIMIT_PART_COUNT':
      return tooLarge(`An upload may carry at most ${limits.files + FIELD_LIMITS.fields} parts`);
    case 'LIMIT_FIELD_KEY':
      return new ApiError('INVALID_REQUEST', `A form field name may be at most ${FIELD_NAME_BYTES} bytes`, { status: 400 });
    default:
      // The rest describe a malformed form (missing or invalid field name, unexpected part).
      return new ApiError('INVALID_REQUEST', `Malformed multipart body: ${error.message}${error.field ? ` (${error.field})` : ''}`, { status: 400 });
  }
}

/**
 * A spooled part's name says which process spools it: `upload-<pid>-<run>-<uuid>`, `run` telling
 * this process from an earlier one of the same pid (a container's server is pid 1 every start).
 */
const SPOOLED = /^upload-(\d+)-([0-9a-f]{8})-[0-9a-f-]{36}$/;
const RUN = randomUUID().slice(0, 8);

/**
 * Removes the spooled parts that processes no longer running left behind (a server killed
 * while a request was being read). Parts of live processes sharing the directory stay.
 */
export async function sweepSpool(directory: string): Promise<number> {
  const names = await readdir(directory).catch(() => [] as string[]);
  const dead = names.filter((name) => {
    const [, pid, run] = SPOOLED.exec(name) ?? [];
    if (!pid) return false;
    return Number(pid) === process.pid ? run !== RUN : !processAlive(Number(pid));
  });
  await Promise.all(dead.map((name) => rm(join(directory, name), { force: true })));
  return dead.length;
}

/** A multer storage engine writing each part to its own file in `directory`, hashing as it goes. */
function spoolStorage(directory: string): multer.StorageEngine {
  mkdirSync(directory, { recursive: true });
  return {
    _handleFile(_req, file, callback) {
      const path = join(directory, `upload-${process.pid}-${RUN}-${randomUUID()}`);
      const hash = createHash('sha256');
      let size = 0;
      const tap = new Transform({
        transform(chunk: Buffer, _encoding, done) {
          hash.update(chunk);
          size += chunk.length;
          done(null, chunk);
        },
      });
      pipeline(file.stream, tap, createWriteStream(path)).then(
        // multer merges what the engine reports into its file record.
        () => callback(null, { path, size, sha256: hash.digest('hex') } satisfies SpooledFile as Partial<Express.Multer.File>),
        // A part cut short (size limit, client gone) leaves nothing behind.
        (error: unknown) => void rm(path, { force: true }).finally(() => callback(error as Error)),
      );
    },
    _removeFile(_req, file, callback) {
      rm((file as Express.Multer.File).path, { force: true }).then(() => callback(null), callback);
    },
  };
}

function spooledFiles(req: Request): Express.Multer.File[] {
  return (req.files as Express.Multer.File[] | undefined) ?? [];
}

export function parseMultipart(route: RouteDefinition, limits: UploadLimits): RequestHandler {
  const upload = multer({
    storage: spoolStorage(limits.directory),
    // Browsers send UTF-8 file names; busboy's default reads them as Latin-1.
    defParamCharset: 'utf8',
    limits: { fileSize: limits.fileSize, files: limits.files, ...FIELD_LIMITS, fieldNameSize: FIELD_NAME_BYTES, parts: limits.files + FIELD_LIMITS.fields },
  }).any();
  const maxBytes = limits.fileSize * limits.files + FIELD_LIMITS.fieldSize * FIELD_LIMITS.fields;
  return (req, res, next) => {
    // Refuse what cannot fit before reading any of it.
    if (Number(req.headers['content-length'] ?? 0) > maxBytes) {
      return next(new ApiError('PAYLOAD_TOO_LARGE', `An upload may carry at most ${limits.files} files of ${limits.fileSize} bytes`));
    }
    // The spooled files live as long as the request: removed when the answer is sent or the
    // client leaves. A part still in flight when the body failed is only multer's placeholder
    // (no path yet); its own pipeline removes what it wrote.
    onResponseEnd(res, () => {
      for (const file of spooledFiles(req)) {
        if (file.path) rm(file.path, { force: true }).catch((error: unknown) => req.log.warn({ err: error }, 'could not remove a spooled upload'));
      }
    });
    upload(req, res, (error?: unknown) => {
      if (error instanceof multer.MulterError) return next(limitError(error, limits));
      // busboy's own failures: no boundary, a truncated form, a malformed part.
      if (error) return next(new ApiError('INVALID_REQUEST', `Malformed multipart body: ${(error as Error).message}`, { status: 400 }));
      const counts = new Map<string, number>();
      for (const file of spooledFiles(req)) {
        // Every later use (the item, the answer, the logs, the idempotency key) sees the clean name.
        file.originalname = cleanFileName(file.originalname);
        counts.set(file.fieldname, (counts.get(file.fieldname) ?? 0) + 1);
      }
      // Placeholders only: validation checks presence and count; handlers get the files themselves.
      for (const [field, count] of counts) {
        req.body[field] = route.uploads[field] === 'one' && count === 1 ? '' : new Array(count).fill('');
      }
      next();
    });
  };
}
