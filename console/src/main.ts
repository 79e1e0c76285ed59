// The operator console's entry point (bundled by esbuild: scripts/build-server.mjs, or in
// memory by server/console/assets.ts when run from source).
import { html } from 'htm/preact';
import { render } from 'preact';
import { App } from './app.js';
import './style.css';

render(html`<${App} />`, document.getElementById('app')!);
