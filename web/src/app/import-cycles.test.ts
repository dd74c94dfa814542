/**
 * Console features never import each other in a circle (issue 10: input ↔ video, main ↔ video
 * and settings ↔ input did). A feature folder is one node: with a cycle through folders neither
 * feature can be read, tested or lazy-loaded without the other. Type imports and tests count
 * too. Inside one feature, its files may not form a cycle either.
 *
 * A regex over the sources rather than import-x/no-cycle: that rule sees file cycles only, and
 * every cycle above was between folders with no file cycle under it.
 */
import { describe, expect, it } from 'vitest';

const SOURCES = import.meta.glob<string>('../features/**/*.{ts,tsx}', {
  query: '?raw',
  import: 'default',
  eager: true,
});

/** `from '…'`, `import('…')` and the bare `import '…'`. */
const SPECIFIER =
  /\bfrom\s+['"]([^'"]+)['"]|\bimport\s*\(\s*['"]([^'"]+)['"]|\bimport\s+['"]([^'"]+)['"]/g;

type Graph = Map<string, Set<string>>;

function normalize(path: string): string {
  const out: string[] = [];
  for (const part of path.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..' && out.length > 0 && out.at(-1) !== '..') out.pop();
    else out.push(part);
  }
  return out.join('/');
}

/** The relative imports of every file, resolved to the files of `SOURCES` they name. */
function fileGraph(sources: Record<string, string>): Graph {
  const files = new Set(Object.keys(sources).map(normalize));
  const resolve = (from: string, spec: string): string | null => {
    const base = normalize(`${from.slice(0, from.lastIndexOf('/'))}/${spec}`);
    for (const candidate of [base, `${base}.ts`, `${base}.tsx`, `${base}/index.ts`]) {
      if (files.has(candidate)) return candidate;
    }
    return null;
  };
  const graph: Graph = new Map();
  for (const [key, text] of Object.entries(sources)) {
    const file = normalize(key);
    const edges = new Set<string>();
    for (const match of text.matchAll(SPECIFIER)) {
      const spec = match[1] ?? match[2] ?? match[3] ?? '';
      if (!spec.startsWith('.')) continue;
      const target = resolve(file, spec);
      if (target && target !== file) edges.add(target);
    }
    graph.set(file, edges);
  }
  return graph;
}

/** `../features/input/x.ts` → `input`. */
function featureOf(file: string): string {
  return file.split('/features/')[1]?.split('/')[0] ?? file;
}

function featureGraph(files: Graph): Graph {
  const graph: Graph = new Map();
  for (const [file, targets] of files) {
    const from = featureOf(file);
    const edges = graph.get(from) ?? new Set<string>();
    graph.set(from, edges);
    for (const target of targets) {
      const to = featureOf(target);
      if (to !== from) edges.add(to);
    }
  }
  return graph;
}

/** The first cycle found, as its nodes with the first repeated at the end; null without one. */
function findCycle(graph: Graph): string[] | null {
  const done = new Set<string>();
  const path: string[] = [];
  const onPath = new Set<string>();
  const visit = (node: string): string[] | null => {
    if (onPath.has(node)) return [...path.slice(path.indexOf(node)), node];
    if (done.has(node)) return null;
    path.push(node);
    onPath.add(node);
    for (const next of [...(graph.get(node) ?? [])].sort()) {
      const cycle = visit(next);
      if (cycle) return cycle;
    }
    path.pop();
    onPath.delete(node);
    done.add(node);
    return null;
  };
  for (const node of [...graph.keys()].sort()) {
    const cycle = visit(node);
    if (cycle) return cycle;
  }
  return null;
}

describe('import cycles in web/src/features', () => {
  const files = fileGraph(SOURCES);

  it('reads the sources and their imports', () => {
    expect(files.size).toBeGreaterThan(50);
    expect(files.get('../features/video/VideoView.tsx')).toContain(
      '../features/input/input-capture.ts',
    );
  });

  it('has no cycle between features', () => {
    const cycle = findCycle(featureGraph(files));
    expect(cycle && `feature cycle: ${cycle.join(' → ')}`).toBeNull();
  });

  it('has no cycle between the files of one feature', () => {
    const inside: Graph = new Map();
    for (const [file, targets] of files) {
      inside.set(file, new Set([...targets].filter((t) => featureOf(t) === featureOf(file))));
    }
    const cycle = findCycle(inside);
    expect(cycle && `file cycle: ${cycle.join(' → ')}`).toBeNull();
  });
});

describe('findCycle', () => {
  it('names the cycle, and finds none in a tree', () => {
    const graph: Graph = new Map([
      ['main', new Set(['video', 'input'])],
      ['video', new Set(['input'])],
      ['input', new Set(['settings'])],
      ['settings', new Set(['input'])],
    ]);
    expect(findCycle(graph)).toEqual(['input', 'settings', 'input']);
    graph.set('settings', new Set());
    expect(findCycle(graph)).toBeNull();
  });

  it('reads type imports, re-exports, multi-line and dynamic imports', () => {
    const graph = fileGraph({
      '../features/a/x.ts': "import type { T } from '../b/y';\nexport * from './z';",
      '../features/a/z.ts': "import {\n  one,\n  two,\n} from '../c/w';",
      '../features/b/y.ts': "const m = () => import('../c/w');",
      '../features/c/w.ts': "import '../a/x';",
    });
    expect(findCycle(featureGraph(graph))).toEqual(['a', 'b', 'c', 'a']);
  });
});
