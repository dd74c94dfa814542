import { Button, Flex, Typography } from 'antd';
import { CodeOutlined } from '@ant-design/icons';
import { useTranslation } from 'react-i18next';
import { openTerminal } from '../terminal/open-terminal';

/**
 * GL's toolbox terminal: /webterm in a new window as the toolbar's terminal button opens it
 * (terminal/open-terminal.ts), on the device's shell or on the remote computer's serial console.
 */
export function TerminalGroup() {
  const { t } = useTranslation();
  return (
    <>
      <Typography.Paragraph type="secondary" style={{ marginTop: 0 }}>
        {t('toolbox.terminalHint')}
      </Typography.Paragraph>
      <Flex vertical gap={8}>
        <Button
          icon={<CodeOutlined />}
          onClick={() => openTerminal('device')}
          data-testid="toolbox-terminal-device"
        >
          {t('toolbox.terminalDevice')}
        </Button>
        <Button
          icon={<CodeOutlined />}
          onClick={() => openTerminal('serial')}
          data-testid="toolbox-terminal-serial"
        >
          {t('terminal.serial')}
        </Button>
      </Flex>
    </>
  );
}
