import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

// The console is served by the device server from web/dist. `npm run dev -w web` proxies the
// API to a server started with `--no-tls --listen 127.0.0.1:8080`.
export default defineConfig({
  plugins: [react()],
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: false, target: 'es2022' },
  // Through a fleet server the console runs under /d/<id>/ (web/src/lib/base.ts): the fleet
  // rewrites index.html's absolute src/href, and what the code loads by itself (lazy chunks'
  // preloads, the decoder worker, CSS urls) is relative to the file asking, so it follows.
  experimental: {
    renderBuiltUrl: (_file, { hostType }) => (hostType === 'html' ? undefined : { relative: true }),
  },
  server: {
    proxy: {
      '/api': { target: 'http://127.0.0.1:8080', ws: true },
      '/janus': { target: 'http://127.0.0.1:8080', ws: true },
    },
  },
});
