/** SPEC 5's text pattern on the support form's contact field (console side). */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { stubFetch, envelope } from '../../test/fetch-stub';
import { flush, render, type Rendered } from '../../test/render';
import { click, typeInto } from '../system/test-utils';
import SupportForm from './SupportForm';

let view: Rendered | undefined;
afterEach(() => {
  view?.unmount();
  view = undefined;
  vi.unstubAllGlobals();
});

describe('support contact', () => {
  it('refuses a contact outside the text pattern before sending, and names what is allowed', async () => {
    const sent = vi.fn();
    vi.stubGlobal(
      'XMLHttpRequest',
      class {
        upload = {};
        open() {}
        setRequestHeader() {}
        send() {
          sent();
        }
      },
    );
    stubFetch({ '/api/support/bundles': () => envelope(200, { bundles: [] }) });
    view = await render(<SupportForm />);
    typeInto(view.byTestId('support-message'), 'No video');
    typeInto(view.byTestId('support-contact'), '"Boss" <me@example.com>');
    click(view, 'support-submit');
    await flush();
    expect(sent).not.toHaveBeenCalled();
    expect(view.container.textContent).toContain(
      'Contact information may only contain ASCII letters, digits, spaces and . , _ - + @ : / ( ) #',
    );
  });
});
