// The operator console (console/src, a Preact app) on the management port at /console: one
// HTML page, its script and its style sheet. `npm start` serves the bundle that
// scripts/build-server.mjs built into dist/console; run from source (tsx, tests) there is
// none, and the console is bundled in memory on its first request, with the same options.
// The page holds an API key (in the tab's sessionStorage): a strict CSP allows only its own
// script and style, and no frame may embed it.
import { readFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RequestHandler } from 'express';
import bundleOptions from '../../console/bundle-options.json' with { type: 'json' };

export const CONSOLE_PATH = '/console';

interface Asset {
  type: string;
  body: Buffer;
}

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Platform console</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${CONSOLE_PATH}/app.css">
</head>
<body>
<div id="app"></div>
<script type="module" src="${CONSOLE_PATH}/app.js"></script>
</body>
</html>
`;

const SECURITY_HEADERS = {
  'Content-Security-Policy': "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cache-Control': 'no-cache',
};

const TYPES: Record<string, string> = { '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8' };

/** dist/console beside dist/server (the bundle's own directory); absent when run from source. */
const builtDir = fileURLToPath(new URL('../console/', import.meta.url));

async function loadAssets(): Promise<Map<string, Asset>> {
  const assets = new Map<string, Asset>();
  const names = ['app.js', 'app.css'];
  if (names.every((name) => existsSync(builtDir + name))) {
    for (const name of names) assets.set(name, { type: TYPES[name.slice(name.lastIndexOf('.'))], body: await readFile(builtDir + name) });
    return assets;
  }
  const { build } = await import('esbuild');
  const result = await build({
    ...(bundleOptions as object),
    absWorkingDir: fileURLToPath(new URL('../../', import.meta.url)),
    outdir: 'dist/console',
    write: false,
  });
  for (const file of result.outputFiles) {
    const name = basename(file.path);
    assets.set(name, { type: TYPES[name.slice(name.lastIndexOf('.'))] ?? 'application/octet-stream', body: Buffer.from(file.contents) });
  }
  return assets;
}

/** Serves GET/HEAD /console and its assets; every other request goes on. */
export function consoleAssets(): RequestHandler {
  let assets: Promise<Map<string, Asset>> | undefined;
  return async (req, res, next) => {
    if (req.path !== CONSOLE_PATH && !req.path.startsWith(`${CONSOLE_PATH}/`)) return next();
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    res.set(SECURITY_HEADERS);
    const name = req.path.slice(CONSOLE_PATH.length + 1);
    if (name === '' || name === 'index.html') {
      res.type('html').send(PAGE);
      return;
    }
    assets ??= loadAssets();
    // A failed build is tried again on the next request rather than kept.
    const found = (await assets.catch((error: unknown) => ((assets = undefined), Promise.reject(error)))).get(name);
    if (!found) return next();
    res.type(found.type).send(found.body);
  };
}
