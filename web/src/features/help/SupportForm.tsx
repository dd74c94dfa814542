import { useCallback, useEffect, useState } from 'react';
import { Alert, Button, Input, Progress, Space, Typography } from 'antd';
import { useTranslation } from 'react-i18next';
import { isPlainText, PLAIN_TEXT_PUNCTUATION } from '@kvm/protocol/validation';
import { errorMessage } from '../../lib/api';
import {
  downloadSupportBundle,
  listSupportBundles,
  SUPPORT_IMAGE_EXTENSIONS,
  SUPPORT_IMAGE_MAX_BYTES,
  SUPPORT_MAX_IMAGES,
  submitSupport,
  type SupportResult,
} from './help-api';

/**
 * SPEC 3/5 contact support: message required, contact information, up to 8 JPG/JPEG/GIF/PNG
 * images of at most 10 MB each. The server checks the same rules (and the images' contents).
 */
export default function SupportForm() {
  const { t } = useTranslation();
  const [message, setMessage] = useState('');
  const [contact, setContact] = useState('');
  const [images, setImages] = useState<File[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [sending, setSending] = useState(false);
  const [percent, setPercent] = useState(0);
  const [result, setResult] = useState<SupportResult | null>(null);
  const [bundles, setBundles] = useState<Array<{ name: string; size: number }>>([]);
  const refreshBundles = useCallback(() => {
    listSupportBundles()
      .then(setBundles)
      .catch(() => undefined);
  }, []);
  useEffect(refreshBundles, [refreshBundles]);

  const addFiles = (list: FileList | null) => {
    setError(null);
    const files = Array.from(list ?? []);
    for (const file of files) {
      if (!SUPPORT_IMAGE_EXTENSIONS.test(file.name)) return setError(t('help.imageType'));
      if (file.size > SUPPORT_IMAGE_MAX_BYTES) return setError(t('help.imageSize'));
    }
    if (images.length + files.length > SUPPORT_MAX_IMAGES) return setError(t('help.imageCount'));
    setImages([...images, ...files]);
  };

  const submit = async () => {
    setResult(null);
    if (message.trim() === '') return setError(t('help.messageRequired'));
    // SPEC 5's text pattern: an email address or a phone number, nothing that is markup.
    if (!isPlainText(contact)) {
      return setError(t('help.contactInvalid', { punctuation: PLAIN_TEXT_PUNCTUATION }));
    }
    setError(null);
    setSending(true);
    setPercent(0);
    try {
      setResult(await submitSupport(message, contact, images, setPercent));
      refreshBundles();
      setMessage('');
      setImages([]);
    } catch (err) {
      setError(errorMessage(err, t('help.sendFailed')));
    } finally {
      setSending(false);
    }
  };

  return (
    <Space direction="vertical" style={{ width: '100%' }} data-testid="support-form">
      <Typography.Text strong>{t('help.contactSupport')}</Typography.Text>
      <Input.TextArea
        data-testid="support-message"
        rows={4}
        maxLength={10_000}
        placeholder={t('help.messagePlaceholder')}
        value={message}
        onChange={(e) => setMessage(e.target.value)}
      />
      <Input
        data-testid="support-contact"
        maxLength={256}
        placeholder={t('help.contactPlaceholder')}
        value={contact}
        onChange={(e) => setContact(e.target.value)}
      />
      <input
        data-testid="support-images"
        type="file"
        multiple
        accept=".jpg,.jpeg,.gif,.png,image/jpeg,image/gif,image/png"
        onChange={(e) => {
          addFiles(e.target.files);
          e.target.value = '';
        }}
      />
      <Typography.Text type="secondary" data-testid="support-image-count">
        {t('help.imagesHint', { count: images.length, max: SUPPORT_MAX_IMAGES })}
      </Typography.Text>
      {images.map((file, i) => (
        <Space key={`${file.name}-${i}`}>
          <span>{file.name}</span>
          <Button
            size="small"
            type="link"
            onClick={() => setImages(images.filter((_, j) => j !== i))}
          >
            {t('help.removeImage')}
          </Button>
        </Space>
      ))}
      {sending && <Progress percent={percent} status="active" data-testid="support-progress" />}
      {error && <Alert type="error" showIcon message={error} data-testid="support-error" />}
      {result && (
        <Alert
          type="success"
          showIcon
          data-testid="support-result"
          message={
            result.delivered === 'sent' ? t('help.sent') : t('help.saved', { name: result.bundle })
          }
        />
      )}
      <Button type="primary" loading={sending} onClick={submit} data-testid="support-submit">
        {t('help.submit')}
      </Button>
      {bundles.length > 0 && (
        <div data-testid="support-bundles">
          <Typography.Text type="secondary">{t('help.savedRequests')}</Typography.Text>
          {bundles.map((b) => (
            <div key={b.name}>
              <Button
                size="small"
                type="link"
                onClick={() =>
                  downloadSupportBundle(b.name).catch((err: unknown) =>
                    setError(errorMessage(err, t('help.exportFailed'))),
                  )
                }
              >
                {b.name}
              </Button>
            </div>
          ))}
        </div>
      )}
    </Space>
  );
}
