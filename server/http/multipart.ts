// Multipart parsing for upload operations. The validator's built-in uploader marks a lone
// file as a string even where the contract declares an array, so a single-file upload of
// `files` would fail validation; here each file field gets the shape the contract declares.
import type { RequestHandler } from 'express';
import multer from 'multer';
import type { RouteDefinition } from '../../generated/contract/routes.js';
import { ApiError } from '../errors.js';

export interface UploadLimits {
  fileSize: number;
  files: number;
}

/** Form fields are ids and flags: a megabyte each and a few dozen of them are plenty. */
const FIELD_LIMITS = { fieldSize: 1024 * 1024, fields: 50 };

export function parseMultipart(route: RouteDefinition, limits: UploadLimits): RequestHandler {
  const upload = multer({
    storage: multer.memoryStorage(),
    limits: { ...limits, ...FIELD_LIMITS, parts: limits.files + FIELD_LIMITS.fields },
  }).any();
  const maxBytes = limits.fileSize * limits.files + FIELD_LIMITS.fieldSize * FIELD_LIMITS.fields;
  return (req, res, next) => {
    // Refuse what cannot fit before buffering any of it.
    if (Number(req.headers['content-length'] ?? 0) > maxBytes) {
      return next(new ApiError('PAYLOAD_TOO_LARGE', `An upload may carry at most ${limits.files} files of ${limits.fileSize} bytes`));
    }
    upload(req, res, (error?: unknown) => {
      if (error instanceof multer.MulterError) return next(error);
      // busboy's own failures: no boundary, a truncated form, a malformed part.
      if (error) return next(new ApiError('INVALID_REQUEST', `Malformed multipart body: ${(error as Error).message}`, { status: 400 }));
      const files = (req.files as Express.Multer.File[] | undefined) ?? [];
      const counts = new Map<string, number>();
      for (const file of files) counts.set(file.fieldname, (counts.get(file.fieldname) ?? 0) + 1);
      // Placeholders only: validation checks presence and count; handlers get the files themselves.
      for (const [field, count] of counts) {
        req.body[field] = route.uploads[field] === 'one' && count === 1 ? '' : new Array(count).fill('');
      }
      next();
    });
  };
}
