// The script-tag build: `window.Watchtower`, configured by `data-*` attributes or Watchtower.init().
import { fromDataset } from './config.ts';
import * as sdk from './index.ts';

declare global {
  interface Window {
    Watchtower?: typeof api;
  }
}

const script = document.currentScript as HTMLScriptElement | null;
// The endpoint defaults to the origin this file was served from, not the page's.
const origin = script?.src ? new URL(script.src, location.href).origin : location.origin;
const api = { ...sdk, init: (options?: sdk.Options) => sdk.init(options, origin) };

// Loaded twice (two tags, or a tag plus a bundle): keep the first copy and its listeners.
if (!window.Watchtower) {
  window.Watchtower = api;
  if (script && Object.keys(script.dataset).length) api.init(fromDataset(script.dataset));
}
