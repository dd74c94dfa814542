import { useState, useSyncExternalStore } from 'react';
import { Button, Input, Space } from 'antd';
import { CloudDownloadOutlined } from '@ant-design/icons';
import { useTranslation } from 'react-i18next';
import { useMessage } from '../../components/notify';
import { loadMsd } from './msd-store';
import { checkImageUrl, msdDownloader } from './remote-download';
import { Section } from './Section';
import { TransferView } from './TransferView';
import type { MsdActions } from './use-msd-action';

/** Download an image from a URL onto the storage, with progress and cancel. */
export function DownloadSection(props: { actions: MsdActions; transferring: boolean }) {
  const { t } = useTranslation();
  const message = useMessage();
  const { actions } = props;
  const download = useSyncExternalStore(msdDownloader.subscribe, msdDownloader.getSnapshot);
  const [url, setUrl] = useState('');
  const [urlInvalid, setUrlInvalid] = useState(false);

  const startDownload = async () => {
    actions.clearError();
    if (!checkImageUrl(url)) {
      setUrlInvalid(true);
      actions.fail(t('storage.download.invalidUrl'));
      return;
    }
    setUrlInvalid(false);
    if (props.transferring) {
      void message.warning(t('storage.upload.running'));
      return;
    }
    try {
      const result = await msdDownloader.start(url);
      setUrl('');
      void message.success(t('storage.download.done', { name: result.image.name }));
    } catch (err) {
      actions.failTransfer(err);
    } finally {
      void loadMsd();
    }
  };

  return (
    <Section title={t('storage.download.title')}>
      <Space.Compact style={{ width: '100%' }}>
        <Input
          value={url}
          status={urlInvalid ? 'error' : undefined}
          placeholder={t('storage.download.placeholder')}
          onChange={(e) => {
            setUrl(e.target.value);
            setUrlInvalid(false);
          }}
          onPressEnter={() => void startDownload()}
          data-testid="msd-url"
          spellCheck={false}
        />
        <Button
          icon={<CloudDownloadOutlined />}
          disabled={props.transferring}
          onClick={() => void startDownload()}
          data-testid="msd-url-download"
        >
          {t('storage.download.start')}
        </Button>
      </Space.Compact>
      <TransferView
        snapshot={download}
        testId="msd-url-progress"
        cancelTestId="msd-url-cancel"
        onCancel={() => msdDownloader.cancel()}
        onDismiss={() => msdDownloader.clear()}
      />
    </Section>
  );
}
