/**
 * Where the provider delivers webhooks on an app at `origin`: the real
 * receiver, and in demo mode the failure lab's unprotected twin. The
 * stand-in is started with exactly these URLs and delivers nowhere else.
 */
export const webhookReceivers = (origin: string) => ({
  provider: `${origin}/api/v1/webhooks/psp`,
  twin: `${origin}/api/trpc/lab.naiveWebhook`,
});
