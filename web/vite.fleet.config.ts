import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

// The fleet console (web/src/fleet/, docs/cloud.md "The fleet console (React)"), served by the
// fleet server from fleet/dist/www. Its own entry: the device's console (vite.config.ts, web/dist)
// holds none of it. No inline script (the fleet's CSP is script-src 'self'); scripts/build.mjs
// renames fleet.html to index.html and pre-compresses.
// `npx vite -c vite.fleet.config.ts` proxies the API to a fleet on https://127.0.0.1:8443.
export default defineConfig({
  plugins: [react()],
  build: {
    outDir: '../fleet/dist/www',
    emptyOutDir: true,
    sourcemap: false,
    target: 'es2022',
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    rollupOptions: { input: 'fleet.html' },
  },
  server: {
    open: '/fleet.html',
    proxy: {
      '/cloud-basic': { target: 'https://127.0.0.1:8443', ws: true, secure: false },
      '/d/': { target: 'https://127.0.0.1:8443', ws: true, secure: false },
    },
  },
});
