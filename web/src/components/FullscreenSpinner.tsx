import { Spin } from 'antd';
import { useTranslation } from 'react-i18next';

/** SPEC 2 app shell: the full-screen spinner with the text 'loading'. */
export function FullscreenSpinner({ testId = 'app-loading' }: { testId?: string }) {
  const { t } = useTranslation();
  return (
    <div
      data-testid={testId}
      style={{
        position: 'fixed',
        inset: 0,
        display: 'flex',
        flexDirection: 'column',
        alignItems: 'center',
        justifyContent: 'center',
        gap: 16,
      }}
    >
      <Spin size="large" />
      <span>{t('loading')}</span>
    </div>
  );
}
