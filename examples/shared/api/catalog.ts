/**
 * The free reads: search, video details, channel and playlist listings. They spend
 * no credit but, like every authenticated request, count against the per-minute budget.
 */
import type { AuthedHandler } from '../auth/guard.ts';
import { json } from '../http/handler.ts';
import type { VideoPlatform } from '../platform/index.ts';

export function catalogHandlers(platform: VideoPlatform) {
  const search: AuthedHandler = async (request) => json(200, { query: request.query.q ?? '', results: await platform.search(request.query.q ?? '') });
  const video: AuthedHandler = async (request) => json(200, await platform.getVideo(request.params.id ?? ''));
  const channelVideos: AuthedHandler = async (request) => {
    const ids = await platform.listChannelVideos(request.params.id ?? '');
    return json(200, { channel_id: request.params.id, video_ids: ids, count: ids.length });
  };
  const playlistVideos: AuthedHandler = async (request) => {
    const ids = await platform.listPlaylistVideos(request.params.id ?? '');
    return json(200, { playlist_id: request.params.id, video_ids: ids, count: ids.length });
  };
  return { search, video, channelVideos, playlistVideos };
}
