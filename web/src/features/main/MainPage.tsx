import { theme } from 'antd';
import { useTranslation } from 'react-i18next';

/** SPEC 2 main page: the remote screen. The video view arrives with the stream issue. */
export default function MainPage() {
  const { t } = useTranslation();
  const { token } = theme.useToken();
  return (
    <div data-testid="main-page" style={{ height: '100%', display: 'flex' }}>
      <div
        data-testid="main-screen"
        style={{
          flex: 1,
          display: 'flex',
          alignItems: 'center',
          justifyContent: 'center',
          background: '#000',
          color: token.colorTextQuaternary,
          minWidth: 0,
        }}
      >
        <span style={{ color: '#8c8c8c' }}>{t('main.noVideo')}</span>
      </div>
    </div>
  );
}
