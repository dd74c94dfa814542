import { afterEach, describe, expect, it, vi } from 'vitest';
import { EDID_PRESETS } from '@kvm/protocol/edid/presets';
import type { EdidState } from '@kvm/protocol/system';
import en from '../../i18n/en.json';
import zh from '../../i18n/zh.json';
import { i18n } from '../../i18n';
import { stubFetch, envelope, type RecordedRequest } from '../../test/fetch-stub';
import { flush, type Rendered, renderPanel } from '../../test/render';
import { chooseOption, click, typeInto } from '../system/test-utils';
import EdidGroup, { presetLabel } from './EdidGroup';

const P1080 = EDID_PRESETS.find((p) => p.key === 'E1920x1080')!;
const P1600 = EDID_PRESETS.find((p) => p.key === 'E1600x1200')!;

function edidRoutes(posts: RecordedRequest[], answer?: () => Response, fresh = false) {
  let state: EdidState = {
    edid: fresh ? '' : P1600.content,
    preset: fresh ? null : P1600.key,
    preferred: { width: 1600, height: 1200, hz: 60 },
    applies: 'power_cycle',
    pending: false,
  };
  return {
    // a bare array on the wire, no envelope (GL 1.10)
    '/api/upgrade/edid_list': () =>
      new Response(JSON.stringify(EDID_PRESETS), {
        headers: { 'Content-Type': 'application/json' },
      }),
    '/api/upgrade/get_edid': () => envelope(200, state),
    '/api/upgrade/edid': (req: RecordedRequest) => {
      posts.push(req);
      if (answer) return answer();
      const edid = new URLSearchParams(req.body).get('edid') ?? '';
      const preset = EDID_PRESETS.find((p) => p.content === edid) ?? null;
      state = { ...state, edid, preset: preset?.key ?? null, pending: true };
      return envelope(200, { status: 'success', message: 'saved' });
    },
  };
}

async function renderGroup(): Promise<Rendered> {
  const view = await renderPanel(<EdidGroup />);
  return view;
}

describe('EdidGroup', () => {
  let view: Rendered | undefined;
  afterEach(() => {
    view?.unmount();
    view = undefined;
    vi.unstubAllGlobals();
  });

  it('applies a preset as the form field edid and says when the remote computer sees it', async () => {
    const posts: RecordedRequest[] = [];
    stubFetch(edidRoutes(posts));
    view = await renderGroup();
    expect(view.byTestId('edid-in-force')?.textContent).toContain('1600x1200 60 Hz');
    expect(view.byTestId('edid-power-cycle')).toBeNull();

    await chooseOption(view, 'edid-preset', P1080.label);
    click(view, 'edid-apply');
    await flush();
    expect(posts[0]?.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(new URLSearchParams(posts[0]?.body).get('edid')).toBe(P1080.content);
    expect(view.byTestId('edid-power-cycle')?.textContent).toBe(en.settings.edid.powerCycle);
    expect(view.byTestId('edid-preset-field')?.dataset['value']).toBe('E1920x1080');
  });

  it("refuses empty or malformed custom hex with 'Invalid EDID format', sending nothing", async () => {
    const posts: RecordedRequest[] = [];
    stubFetch(edidRoutes(posts));
    view = await renderGroup();
    await chooseOption(view, 'edid-preset', en.settings.edid.custom);
    const area = view.byTestId('edid-custom');
    typeInto(area, '');
    click(view, 'edid-apply');
    await flush();
    expect(view.byTestId('edid-error')?.textContent).toBe('Invalid EDID format');

    // one byte off: the checksum fails
    const broken = P1080.content.slice(0, 40) + 'ff' + P1080.content.slice(42);
    typeInto(area, broken);
    click(view, 'edid-apply');
    await flush();
    expect(view.byTestId('edid-error')?.textContent).toBe('Invalid EDID format');
    expect(posts).toHaveLength(0);

    // valid hex with whitespace goes as plain hex
    typeInto(area, P1080.content.replace(/(.{32})/g, '$1\n'));
    click(view, 'edid-apply');
    await flush();
    expect(view.byTestId('edid-error')).toBeNull();
    expect(new URLSearchParams(posts[0]?.body).get('edid')).toBe(P1080.content);
  });

  it("shows the server's refusal", async () => {
    const posts: RecordedRequest[] = [];
    stubFetch(
      edidRoutes(posts, () =>
        envelope(400, { error: 'BadRequestError', error_msg: 'EDID write failed: chip busy' }),
      ),
    );
    view = await renderGroup();
    await chooseOption(view, 'edid-preset', P1080.label);
    click(view, 'edid-apply');
    await flush();
    await vi.waitFor(() =>
      expect(document.body.textContent).toContain('EDID write failed: chip busy'),
    );
  });

  it('shows the default preset on a fresh device (nothing written yet) and says so', async () => {
    const posts: RecordedRequest[] = [];
    stubFetch(edidRoutes(posts, undefined, true));
    view = await renderGroup();
    expect(view.byTestId('edid-preset-field')?.dataset['value']).toBe('E1920x1080');
    expect(view.byTestId('edid-preset')?.textContent).toContain(P1080.label);
    expect(view.byTestId('edid-none-saved')?.textContent).toBe(en.settings.edid.noneSaved);
    click(view, 'edid-apply');
    await flush();
    expect(new URLSearchParams(posts[0]?.body).get('edid')).toBe(P1080.content);
    await vi.waitFor(() => expect(view?.byTestId('edid-none-saved')).toBeNull());
  });

  it("names the presets in the console's language from their keys (en: the server's labels)", async () => {
    // en: every label as the server writes it (the keys carry the same facts)
    for (const p of EDID_PRESETS) expect(presetLabel(p, i18n.t)).toBe(p.label);
    expect(presetLabel({ ...P1080, key: 'other-device-7' }, i18n.t)).toBe(P1080.label);
    stubFetch(edidRoutes([]));
    view = await renderGroup();
    view.unmount();
    await i18n.changeLanguage('zh');
    try {
      view = await renderGroup();
      const zhLabel = `1920x1080/${zh.settings.edid.displayOurs}/60Hz`;
      await chooseOption(view, 'edid-preset', zhLabel);
      const texts = [...document.querySelectorAll<HTMLElement>('.ant-select-item-option')].map(
        (o) => o.textContent ?? '',
      );
      expect(texts.some((x) => x.includes('KVM Display') || x.includes('OV Monitor'))).toBe(false);
      expect(texts).toContain(`2560x1440/${zh.settings.edid.displayOther}/60Hz`);
    } finally {
      await i18n.changeLanguage('en');
    }
  });
});
