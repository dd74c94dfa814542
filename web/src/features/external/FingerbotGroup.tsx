import { useEffect } from 'react';
import { Alert } from 'antd';
import { useTranslation } from 'react-i18next';
import { LoadingIcon } from '../../components/LoadingIcon';
import FingerbotPanel from '../fingerbot/FingerbotPanel';
import { loadFingerbotExist, useFingerbot } from '../fingerbot/fingerbot-store';

/**
 * GL's external devices: the fingerbot. With one paired, the toolbar's fingerbot panel itself;
 * without (`exist` false, from the `fingerbot` event or GET /api/fingerbot/exist), what to do.
 */
export function FingerbotGroup() {
  const { t } = useTranslation();
  const exist = useFingerbot((s) => s.exist);

  useEffect(() => {
    // The event socket's first burst may have come before this module was loaded.
    if (useFingerbot.getState().exist === null) void loadFingerbotExist();
  }, []);

  if (exist === null) return <LoadingIcon size={16} />;
  if (!exist) {
    return (
      <Alert
        type="info"
        showIcon
        title={<span data-testid="external-fingerbot-none">{t('external.fingerbotNone')}</span>}
        description={t('external.fingerbotNoneHint')}
      />
    );
  }
  return <FingerbotPanel />;
}
