import { theme } from 'antd';
import { useTranslation } from 'react-i18next';
import type { I18nKey } from '../../i18n/keys';
import { useHid } from './input-session';

function onlineText(online: boolean | undefined): I18nKey {
  return online === undefined ? 'status.unknown' : online ? 'status.online' : 'status.offline';
}

function flag(value: boolean | undefined): string {
  return value === undefined ? 'unknown' : String(value);
}

/** SPEC 2 status bar, mouse slot: online or offline, absolute or relative. */
export function MouseStatus() {
  const { t } = useTranslation();
  const online = useHid((s) => s.state?.mouse?.online);
  const absolute = useHid((s) => s.state?.mouse?.absolute);
  return (
    <span data-testid="status-mouse" data-online={flag(online)} data-absolute={flag(absolute)}>
      {t('status.mouse')}: {t(onlineText(online))}
      {online && absolute !== undefined && (
        <> · {t(absolute ? 'status.absolute' : 'status.relative')}</>
      )}
    </span>
  );
}

const LEDS = [
  ['caps', 'status.capsLock'],
  ['num', 'status.numLock'],
  ['scroll', 'status.scrollLock'],
] as const satisfies ReadonlyArray<readonly [string, I18nKey]>;

/** SPEC 2 status bar, keyboard slot: online or offline, and the Caps/Num/Scroll Lock LEDs. */
export function KeyboardStatus() {
  const { t } = useTranslation();
  const { token } = theme.useToken();
  const online = useHid((s) => s.state?.keyboard?.online);
  const caps = useHid((s) => s.state?.keyboard?.leds?.caps);
  const num = useHid((s) => s.state?.keyboard?.leds?.num);
  const scroll = useHid((s) => s.state?.keyboard?.leds?.scroll);
  const leds = { caps, num, scroll };
  return (
    <span
      data-testid="status-keyboard"
      data-online={flag(online)}
      data-caps={flag(caps)}
      data-num={flag(num)}
      data-scroll={flag(scroll)}
    >
      {t('status.keyboard')}: {t(onlineText(online))}
      {online &&
        LEDS.map(([id, label]) => (
          <span
            key={id}
            data-testid={`status-led-${id}`}
            data-on={leds[id] ? 'true' : 'false'}
            style={{
              marginLeft: 6,
              color: leds[id] ? token.colorSuccess : token.colorTextQuaternary,
              fontWeight: leds[id] ? 600 : undefined,
            }}
          >
            {t(label)}
          </span>
        ))}
    </span>
  );
}
