// Multipart parsing for upload operations. The validator's built-in uploader marks a lone
// file as a string even where the contract declares an array, so a single-file upload of
// `files` would fail validation; here each file field gets the shape the contract declares.
import type { RequestHandler } from 'express';
import multer from 'multer';
import type { RouteDefinition } from '../../generated/contract/routes.js';

export interface UploadLimits {
  fileSize: number;
  files: number;
}

export function parseMultipart(route: RouteDefinition, limits: UploadLimits): RequestHandler {
  const upload = multer({ storage: multer.memoryStorage(), limits }).any();
  return (req, res, next) => {
    upload(req, res, (error?: unknown) => {
      if (error) return next(error);
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
