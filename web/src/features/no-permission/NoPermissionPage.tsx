import { Button, Result } from 'antd';
import { useTranslation } from 'react-i18next';
import { useNavigate } from 'react-router';

/** SPEC 2: any path that is no route of the console. */
export default function NoPermissionPage() {
  const { t } = useTranslation();
  const navigate = useNavigate();
  return (
    <div data-testid="no-permission" style={{ paddingTop: 48 }}>
      <Result
        status="403"
        title="403"
        subTitle={t('common.noPermission')}
        extra={
          <Button type="primary" onClick={() => void navigate('/')}>
            {t('common.backHome')}
          </Button>
        }
      />
    </div>
  );
}
