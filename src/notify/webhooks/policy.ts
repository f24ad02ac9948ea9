import type { Config } from '../../config.ts';
import type { UrlPolicy } from '../../domain/webhook-url.ts';

/** WEBHOOK_ALLOW_HOSTS and WEBHOOK_ALLOW_PRIVATE as the URL rules of endpoints. */
export function webhookPolicy(config: Pick<Config, 'webhookAllowHosts' | 'webhookAllowPrivate'>): UrlPolicy {
  return { allowHttpHosts: config.webhookAllowHosts, allowPrivate: config.webhookAllowPrivate };
}
