/**
 * Start-up shared by `npm start` (Express) and `npm run start:koa` (docs/example-service.md#endpoints): reads PORT
 * (default 3000), HOST (default 127.0.0.1), REDIS_URL (default: a local redis-server started
 * here) or REDIS_CLUSTER_NODES (a Redis Cluster), REDIS_TIMEOUT_MS (default 2000),
 * ADMIN_TOKEN (enables /admin), WORKER=auto|manual, IETF_RATELIMIT_HEADERS=1 (adds the IETF
 * draft RateLimit fields), FAIL_OPEN_FREE=1 (free catalog reads survive a Redis outage) and
 * FAILED_AUTH_PER_MINUTE (failed key checks a client IP may make per minute, default 10),
 * PUBLIC_URL (the website's public origin behind a proxy) and TRUST_PROXY=1 (believe
 * X-Forwarded-Proto / -Host) and DURABLE_REPLICAS (replicas that must confirm each credit
 * movement, default 0: off), WEBHOOK_URL and WEBHOOK_SECRET (tollgate's events as signed
 * webhooks; off when WEBHOOK_URL is unset); creates a demo account and prints the URL, the
 * website's address, its API key (shown once) and a curl to try.
 */
import { FAILED_AUTH_PER_MINUTE } from './auth/failedAuth.ts';
import type { Listening } from './http/listen.ts';
import { describeTarget } from './redis/client.ts';
import { redisFromEnv } from './redis/fromEnv.ts';
import { createService, type Service } from './service.ts';
import type { WorkerMode } from './jobs/worker.ts';
import { checkWebhookOptions, type WebhookOptions } from './events/webhooks.ts';

export type ListenFn = (service: Service, port: number, host?: string) => Promise<Listening>;

export async function main(framework: string, listenFn: ListenFn, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const port = Number(env.PORT ?? 3000);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`PORT must be a port number, got ${env.PORT}`);
  const worker = (env.WORKER ?? 'auto') as WorkerMode;
  if (worker !== 'auto' && worker !== 'manual') throw new Error(`WORKER must be auto or manual, got ${env.WORKER}`);
  const timeoutMs = Number(env.REDIS_TIMEOUT_MS ?? 2000);
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1) throw new Error(`REDIS_TIMEOUT_MS must be a whole number of milliseconds, got ${env.REDIS_TIMEOUT_MS}`);
  const failedAuthPerMinute = Number(env.FAILED_AUTH_PER_MINUTE ?? FAILED_AUTH_PER_MINUTE);
  if (!Number.isInteger(failedAuthPerMinute) || failedAuthPerMinute < 1) {
    throw new Error(`FAILED_AUTH_PER_MINUTE must be a whole number of attempts >= 1, got ${env.FAILED_AUTH_PER_MINUTE}`);
  }
  const durableReplicas = Number(env.DURABLE_REPLICAS ?? 0);
  if (!Number.isInteger(durableReplicas) || durableReplicas < 0)
    throw new Error(`DURABLE_REPLICAS must be a whole number of replicas >= 0, got ${env.DURABLE_REPLICAS}`);
  const webhooks = webhooksFromEnv(env);
  const redis = await redisFromEnv(env);
  let service: Service | undefined;
  let server: Listening | undefined;
  const shutdown = async () => {
    await server?.close();
    await service?.close();
    await redis.stop();
  };
  try {
    service = await createService({
      ...('url' in redis.target ? { redisUrl: redis.target.url } : { redisClusterNodes: redis.target.clusterNodes }),
      timeoutMs,
      adminToken: env.ADMIN_TOKEN || undefined,
      worker,
      ietfHeaders: env.IETF_RATELIMIT_HEADERS === '1',
      failOpenFreeEndpoints: env.FAIL_OPEN_FREE === '1',
      failedAuthPerMinute,
      site: { publicUrl: env.PUBLIC_URL || undefined, trustProxy: env.TRUST_PROXY === '1' },
      durableReplicas,
      webhooks,
    });
    const demo = await service.createAccount('starter');
    server = await listenFn(service, port, env.HOST ?? '127.0.0.1');
    const lines = [
      `tollgate example (${framework}) listening on ${server.url}`,
      `  redis: ${describeTarget(redis.target)}${redis.started ? ' (started for this run, data is not kept; set REDIS_URL to use your own)' : ''}`,
      `  worker: ${worker}; admin endpoints: ${env.ADMIN_TOKEN ? 'on' : 'off (set ADMIN_TOKEN to turn them on)'}; free catalog reads when Redis is down: ${env.FAIL_OPEN_FREE === '1' ? 'served (FAIL_OPEN_FREE=1)' : 'refused (503)'}`,
      `  credit movements confirmed by: ${durableReplicas === 0 ? 'the primary alone (set DURABLE_REPLICAS to wait for replicas)' : `${durableReplicas} replica(s) (DURABLE_REPLICAS)`}`,
      `  webhooks: ${webhooks ? `tollgate's events to ${webhooks.url}, signed with WEBHOOK_SECRET` : 'off (set WEBHOOK_URL and WEBHOOK_SECRET to receive events)'}`,
      `  failed key checks: ${failedAuthPerMinute} per minute and client IP, then 429 until the minute ends (FAILED_AUTH_PER_MINUTE)`,
      `  demo account: ${demo.accountId} (plan starter)`,
      `  demo API key (shown once): ${demo.apiKey}`,
      `  website: ${(env.PUBLIC_URL || server.url).replace(/\/+$/, '')}/ (sign in there with the demo API key)`,
      `  try: curl -H "Authorization: Bearer ${demo.apiKey}" ${server.url}/transcript/dQw4w9WgXcQ`,
    ];
    console.log(lines.join('\n'));
  } catch (error) {
    await shutdown();
    throw error;
  }
  let stopping = false;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (stopping) return;
      stopping = true;
      shutdown().then(
        () => process.exit(0),
        (error) => {
          console.error(error);
          process.exit(1);
        },
      );
    });
  }
}

/** WEBHOOK_URL turns the webhooks on and then needs WEBHOOK_SECRET; both are checked before Redis is touched. */
function webhooksFromEnv(env: NodeJS.ProcessEnv): WebhookOptions | undefined {
  if (!env.WEBHOOK_URL) return undefined;
  if (!env.WEBHOOK_SECRET) throw new Error('WEBHOOK_URL needs WEBHOOK_SECRET, the whsec_... secret the receiver verifies with');
  const webhooks = { url: env.WEBHOOK_URL, secret: env.WEBHOOK_SECRET };
  checkWebhookOptions(webhooks);
  return webhooks;
}
