import { useTranslation } from 'react-i18next';
import { LoadingIcon } from './LoadingIcon';

/** SPEC 2 app shell: the full-screen spinner with the text 'loading' (SPEC 9's icon, 140 px). */
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
      <LoadingIcon testId={`${testId}-icon`} />
      <span>{t('loading')}</span>
    </div>
  );
}
