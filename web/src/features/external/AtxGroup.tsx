import { Alert, Button, Flex, Typography, theme } from 'antd';
import { useTranslation } from 'react-i18next';
import { LoadingIcon } from '../../components/LoadingIcon';
import { ATX_BUTTON_TEXT, ATX_ORDER, useAtxControl } from '../power/use-atx-control';

function Led({ on, label, testId }: { on: boolean; label: string; testId: string }) {
  const { token } = theme.useToken();
  return (
    <Flex align="center" gap={6} data-testid={testId} data-on={on ? 'true' : 'false'}>
      <span
        aria-hidden
        style={{
          width: 10,
          height: 10,
          borderRadius: '50%',
          background: on ? token.colorSuccess : token.colorTextQuaternary,
        }}
      />
      <Typography.Text>{label}</Typography.Text>
    </Flex>
  );
}

/**
 * GL's external devices: the ATX board. The toolbar power menu's control (useAtxControl: the
 * `atx` state, the same presses after the same confirmations) with its LEDs spelt out; a target
 * without an ATX board says so.
 */
export function AtxGroup() {
  const { t } = useTranslation();
  const atx = useAtxControl();

  if (atx.state === null) return <LoadingIcon size={16} />;
  if (!atx.enabled) {
    return (
      <Alert
        type="info"
        showIcon
        title={<span data-testid="external-atx-none">{t('power.disabled')}</span>}
        description={t('external.atxNoneHint')}
      />
    );
  }
  return (
    <>
      <Flex gap={16} style={{ marginBottom: 12 }}>
        <Led on={atx.powerOn} label={t('external.ledPower')} testId="external-atx-led-power" />
        <Led on={atx.hddOn} label={t('external.ledHdd')} testId="external-atx-led-hdd" />
      </Flex>
      {atx.problem && (
        <Alert
          type="warning"
          showIcon
          style={{ marginBottom: 12 }}
          title={
            <span data-testid="external-atx-problem">
              {t('power.offline')}: {atx.problem}
            </span>
          }
        />
      )}
      {atx.busy && (
        <Typography.Paragraph type="secondary" data-testid="external-atx-busy">
          {t('power.busy')}
        </Typography.Paragraph>
      )}
      <Flex vertical gap={8}>
        {ATX_ORDER.map((button) => (
          <Button
            key={button}
            danger={button !== 'power'}
            disabled={!atx.canPress}
            title={t(ATX_BUTTON_TEXT[button].hint)}
            onClick={() => atx.ask(button)}
            data-testid={`external-atx-${button}`}
          >
            {t(ATX_BUTTON_TEXT[button].label)}
          </Button>
        ))}
      </Flex>
      {atx.dialog}
    </>
  );
}
