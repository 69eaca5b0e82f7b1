import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  type CommentsPage,
  type CommentSort,
  convertTranscript,
  createFakePlatform,
  type PlatformError,
  type Transcript,
  type VideoPlatform,
  assertChannelId,
  assertPlaylistId,
  assertVideoId,
  isPlatformError,
  isVideoId,
  videoBehaviour,
} from '../../examples/shared/platform/index.ts';

// The id alphabet as the contract states it, independent of the implementation's own copy.
const ID_CHARS = [...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-'];
const idChars = (minLength: number, maxLength: number) => fc.string({ unit: fc.constantFrom(...ID_CHARS), minLength, maxLength });

const videoIdArb = idChars(11, 11);
const ordinaryVideoIdArb = videoIdArb.filter((id) => videoBehaviour(id) === 'ordinary');
const channelIdArb = idChars(22, 22).map((rest) => `UC${rest}`);
const playlistIdArb = idChars(16, 32).map((rest) => `PL${rest}`);

const platform = createFakePlatform();

const ORDINARY = 'dQw4w9WgXcQ';
const UNAVAILABLE = 'unavail0001';
const NO_CAPTIONS = 'nocapt00001';
const NO_COMMENTS = 'nocomm00001';
const COMMENTS_FAIL = 'errcomm0001';
const BAD_CONVERSION = 'badconv0001';

async function rejection(promise: Promise<unknown>): Promise<PlatformError> {
  try {
    await promise;
  } catch (error) {
    if (isPlatformError(error)) return error;
    throw error;
  }
  throw new Error('expected the call to fail');
}

function thrown(run: () => unknown): PlatformError {
  try {
    run();
  } catch (error) {
    if (isPlatformError(error)) return error;
    throw error;
  }
  throw new Error('expected the call to throw');
}

const badRequest = { status: 400, code: 'invalid_request' };

/** Follows next_page_token from the first page until it is null. */
async function allPages(p: VideoPlatform, videoId: string, sort: CommentSort): Promise<CommentsPage[]> {
  const pages = [await p.getComments(videoId, { sort })];
  for (let last = pages[0]; last?.next_page_token; last = pages.at(-1)) {
    if (pages.length > 10) throw new Error('page tokens do not end');
    pages.push(await p.getComments(videoId, { sort, pageToken: last.next_page_token }));
  }
  return pages;
}

describe('ids (else 400)', () => {
  it('a video id is exactly 11 chars of [A-Za-z0-9_-]', () => {
    fc.assert(fc.property(videoIdArb, (id) => assertVideoId(id) === id));
  });

  it.each([
    ['that is too short', 'dQw4w9WgXc'],
    ['that is too long', 'dQw4w9WgXcQQ'],
    ['with a bad char', 'dQw4w9WgX.Q'],
    ['with a space', 'dQw4w9WgX Q'],
    ['that is empty', ''],
  ])('a video id %s is 400 invalid_request', async (_, id) => {
    expect(thrown(() => assertVideoId(id))).toMatchObject({
      ...badRequest,
      name: 'InvalidIdError',
      param: 'video_id',
    });
    for (const call of [platform.getVideo(id), platform.getTranscript(id), platform.getComments(id, { sort: 'top' })]) {
      expect(await rejection(call)).toMatchObject(badRequest);
    }
  });

  it('a channel id is UC + 22 id chars', () => {
    fc.assert(fc.property(channelIdArb, (id) => assertChannelId(id) === id));
  });

  it.each([
    ['too short', `UC${'a'.repeat(21)}`],
    ['too long', `UC${'a'.repeat(23)}`],
    ['a bad char', `UC${'a'.repeat(21)}!`],
    ['the wrong prefix', `UX${'a'.repeat(22)}`],
    ['a lower-case prefix', `uc${'a'.repeat(22)}`],
    ['a playlist id', `PL${'a'.repeat(22)}`],
  ])('a channel id with %s is 400 invalid_request', async (_, id) => {
    expect(thrown(() => assertChannelId(id))).toMatchObject({ ...badRequest, param: 'channel_id' });
    expect(await rejection(platform.listChannelVideos(id))).toMatchObject(badRequest);
  });

  it('a playlist id is PL + 16-32 id chars', () => {
    fc.assert(fc.property(playlistIdArb, (id) => assertPlaylistId(id) === id));
  });

  it.each([
    ['too short', `PL${'a'.repeat(15)}`],
    ['too long', `PL${'a'.repeat(33)}`],
    ['a bad char', `PL${'a'.repeat(19)}/`],
    ['the wrong prefix', `PX${'a'.repeat(20)}`],
    ['a channel id', `UC${'a'.repeat(22)}`],
  ])('a playlist id with %s is 400 invalid_request', async (_, id) => {
    expect(thrown(() => assertPlaylistId(id))).toMatchObject({ ...badRequest, param: 'playlist_id' });
    expect(await rejection(platform.listPlaylistVideos(id))).toMatchObject(badRequest);
  });
});

describe('video id prefixes', () => {
  it('an id starting unavail is unavailable: video, transcript and comments are 404 video_unavailable', async () => {
    const unavailable = { status: 404, code: 'video_unavailable', name: 'VideoUnavailableError' };
    expect(await rejection(platform.getVideo(UNAVAILABLE))).toMatchObject(unavailable);
    expect(await rejection(platform.getTranscript(UNAVAILABLE))).toMatchObject(unavailable);
    expect(await rejection(platform.getComments(UNAVAILABLE, { sort: 'top' }))).toMatchObject(unavailable);
  });

  it('an id starting nocapt has no captions (404 no_captions) but has details and comments', async () => {
    expect(await rejection(platform.getTranscript(NO_CAPTIONS))).toMatchObject({
      status: 404,
      code: 'no_captions',
      name: 'NoCaptionsError',
    });
    expect((await platform.getVideo(NO_CAPTIONS)).id).toBe(NO_CAPTIONS);
    expect((await platform.getComments(NO_CAPTIONS, { sort: 'top' })).comments).toHaveLength(20);
  });

  it('an id starting nocomm has only empty comment pages (Top, Newest and reply threads)', async () => {
    const replyTo = (await platform.getComments(ORDINARY, { sort: 'top' })).comments[0]?.id;
    for (const request of [{ sort: 'top' as const }, { sort: 'newest' as const }, { sort: 'top' as const, replyTo }]) {
      const page = await platform.getComments(NO_COMMENTS, request);
      expect(page).toMatchObject({ video_id: NO_COMMENTS, comments: [], next_page_token: null });
    }
    expect((await platform.getTranscript(NO_COMMENTS)).segments.length).toBeGreaterThan(0);
  });

  it('an id starting errcomm fails comment fetches with 502 upstream_error', async () => {
    const replyTo = (await platform.getComments(ORDINARY, { sort: 'top' })).comments[0]?.id;
    for (const request of [{ sort: 'top' as const }, { sort: 'newest' as const }, { sort: 'top' as const, replyTo }]) {
      expect(await rejection(platform.getComments(COMMENTS_FAIL, request))).toMatchObject({
        status: 502,
        code: 'upstream_error',
        name: 'UpstreamError',
      });
    }
    expect((await platform.getTranscript(COMMENTS_FAIL)).segments.length).toBeGreaterThan(0);
  });

  it('an id starting badconv fails every non-JSON conversion (502) while JSON works', async () => {
    const transcript = await platform.getTranscript(BAD_CONVERSION);
    for (const format of ['text', 'srt', 'vtt'] as const) {
      expect(thrown(() => convertTranscript(transcript, format))).toMatchObject({
        status: 502,
        code: 'upstream_error',
        name: 'ConversionError',
        message: expect.stringContaining('failed'),
      });
    }
    expect(JSON.parse(convertTranscript(transcript, 'json').body)).toEqual(transcript);
  });

  it('the request is checked before the prefix: a bad page token on an unavailable video is 400', async () => {
    expect(await rejection(platform.getComments(UNAVAILABLE, { sort: 'top', pageToken: 'nope' }))).toMatchObject(badRequest);
  });
});

describe('comment pages (any other id has 3 nonempty Top pages of 20 comments)', () => {
  it('exactly 3 nonempty Top pages of 20, chained by page tokens, the last with next_page_token null', async () => {
    await fc.assert(
      fc.asyncProperty(ordinaryVideoIdArb, async (id) => {
        const pages = await allPages(platform, id, 'top');
        expect(pages.map((page) => page.comments.length)).toEqual([20, 20, 20]);
        expect(pages.map((page) => page.next_page_token === null)).toEqual([false, false, true]);
        const ids = pages.flatMap((page) => page.comments.map((comment) => comment.id));
        expect(new Set(ids).size).toBe(60);
      }),
      { numRuns: 25 },
    );
  });

  it('Newest also has 3 pages of 20, in another order than Top', async () => {
    const top = await allPages(platform, ORDINARY, 'top');
    const newest = await allPages(platform, ORDINARY, 'newest');
    expect(newest.map((page) => page.comments.length)).toEqual([20, 20, 20]);
    expect(newest.at(-1)?.next_page_token).toBeNull();
    const likes = top.flatMap((page) => page.comments.map((comment) => comment.like_count));
    expect(likes).toEqual([...likes].sort((a, b) => b - a));
    const dates = newest.flatMap((page) => page.comments.map((comment) => comment.published_at));
    expect(dates).toEqual([...dates].sort().reverse());
    expect(newest[0]?.comments.map((c) => c.id)).not.toEqual(top[0]?.comments.map((c) => c.id));
  });

  it('a reply thread is one nonempty page, smaller than a Top page, with no continuation', async () => {
    const top = await platform.getComments(ORDINARY, { sort: 'top' });
    for (const parent of top.comments) {
      const thread = await platform.getComments(ORDINARY, { sort: 'top', replyTo: parent.id });
      expect(thread.reply_to).toBe(parent.id);
      expect(thread.next_page_token).toBeNull();
      expect(thread.comments.length).toBe(parent.reply_count);
      expect(thread.comments.length).toBeGreaterThanOrEqual(1);
      expect(thread.comments.length).toBeLessThan(20);
      for (const reply of thread.comments) expect(reply.published_at > parent.published_at).toBe(true);
    }
  });

  it('reply_to must be a comment of the same video (else 400)', async () => {
    const parent = (await platform.getComments(ORDINARY, { sort: 'top' })).comments[0]?.id;
    const aReply = (await platform.getComments(ORDINARY, { sort: 'top', replyTo: parent })).comments[0]?.id;
    const cases: [string, string | undefined][] = [
      ['AAAAAAAAAAA', parent], // a comment of another video
      [ORDINARY, 'not-a-comment'],
      [ORDINARY, aReply], // replies have no reply threads of their own
    ];
    for (const [videoId, replyTo] of cases) {
      expect(await rejection(platform.getComments(videoId, { sort: 'top', replyTo }))).toMatchObject({
        ...badRequest,
        param: 'reply_to',
      });
    }
  });

  it('an unknown page token is 400 invalid_request, as is a token of another video or sort', async () => {
    const token = (await platform.getComments(ORDINARY, { sort: 'top' })).next_page_token ?? '';
    const cases: [string, CommentSort, string][] = [
      [ORDINARY, 'top', 'garbage'],
      [ORDINARY, 'top', token.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A'))],
      [ORDINARY, 'top', token.replace('-2-', '-4-')],
      ['AAAAAAAAAAA', 'top', token],
      [ORDINARY, 'newest', token],
    ];
    for (const [videoId, sort, pageToken] of cases) {
      expect(await rejection(platform.getComments(videoId, { sort, pageToken }))).toMatchObject({
        ...badRequest,
        param: 'page_token',
      });
    }
  });

  it('a reply thread has no continuation: page_token with reply_to is 400 invalid_request', async () => {
    const first = await platform.getComments(ORDINARY, { sort: 'top' });
    const request = { sort: 'top' as const, pageToken: first.next_page_token ?? '', replyTo: first.comments[0]?.id };
    expect(await rejection(platform.getComments(ORDINARY, request))).toMatchObject(badRequest);
  });

  it('an empty page token means the first page', async () => {
    expect(await platform.getComments(ORDINARY, { sort: 'top', pageToken: '' })).toEqual(await platform.getComments(ORDINARY, { sort: 'top' }));
  });

  it('a sort other than top or newest is 400 invalid_request', async () => {
    const request = { sort: 'oldest' } as unknown as { sort: CommentSort };
    expect(await rejection(platform.getComments(ORDINARY, request))).toMatchObject({ ...badRequest, param: 'sort' });
  });
});

describe('determinism (no network, everything derived from the id)', () => {
  it('the same video id gives the same details, transcript and comments from any instance', async () => {
    const other = createFakePlatform();
    await fc.assert(
      fc.asyncProperty(ordinaryVideoIdArb, async (id) => {
        expect(await other.getVideo(id)).toEqual(await platform.getVideo(id));
        expect(await other.getTranscript(id)).toEqual(await platform.getTranscript(id));
        const newest = { sort: 'newest' as const };
        expect(await other.getComments(id, newest)).toEqual(await platform.getComments(id, newest));
      }),
      { numRuns: 25 },
    );
  });

  it('transcript segments are in order, do not overlap and end within the video', async () => {
    await fc.assert(
      fc.asyncProperty(ordinaryVideoIdArb, async (id) => {
        const video = await platform.getVideo(id);
        const { segments } = await platform.getTranscript(id);
        expect(segments.length).toBeGreaterThan(0);
        // Times are whole milliseconds; compare them as such, not as sums of floats.
        let endMs = 0;
        for (const segment of segments) {
          const startMs = Math.round(segment.start * 1000);
          const durationMs = Math.round(segment.duration * 1000);
          expect(startMs / 1000).toBe(segment.start);
          expect(startMs).toBeGreaterThanOrEqual(endMs);
          expect(durationMs).toBeGreaterThan(0);
          endMs = startMs + durationMs;
        }
        expect(endMs).toBeLessThanOrEqual(video.duration_seconds * 1000);
      }),
      { numRuns: 25 },
    );
  });
});

describe('channels and playlists (a deterministic set of 20-200 videos derived from the id)', () => {
  const listings = [
    ['channel', channelIdArb, (id: string) => platform.listChannelVideos(id)],
    ['playlist', playlistIdArb, (id: string) => platform.listPlaylistVideos(id)],
  ] as const;

  describe.each(listings)('a %s', (_, idArb, list) => {
    it('lists 20-200 distinct valid video ids, the same list every time', async () => {
      await fc.assert(
        fc.asyncProperty(idArb, async (id) => {
          const videos = await list(id);
          expect(videos.length).toBeGreaterThanOrEqual(20);
          expect(videos.length).toBeLessThanOrEqual(200);
          expect(new Set(videos).size).toBe(videos.length);
          expect(videos.every(isVideoId)).toBe(true);
          expect(await list(id)).toEqual(videos);
        }),
        { numRuns: 50 },
      );
    });

    it('different ids list different videos', async () => {
      await fc.assert(
        fc.asyncProperty(idArb, idArb, async (a, b) => {
          fc.pre(a !== b);
          expect(await list(a)).not.toEqual(await list(b));
        }),
        { numRuns: 50 },
      );
    });

    it('lists mostly ordinary videos, with at least one unavailable and one without captions', async () => {
      await fc.assert(
        fc.asyncProperty(idArb, async (id) => {
          const behaviours = (await list(id)).map(videoBehaviour);
          expect(behaviours).toContain('unavailable');
          expect(behaviours).toContain('no_captions');
          const ordinary = behaviours.filter((b) => b === 'ordinary').length;
          expect(ordinary / behaviours.length).toBeGreaterThanOrEqual(0.75);
        }),
        { numRuns: 50 },
      );
    });
  });

  it('a channel and a playlist with the same characters list different videos', async () => {
    const rest = 'abcdefghijklmnopqrstuv';
    expect(await platform.listChannelVideos(`UC${rest}`)).not.toEqual(await platform.listPlaylistVideos(`PL${rest}`));
  });
});

describe('search (free endpoint)', () => {
  it('returns 1-10 available videos, the same for the same query up to case and spacing', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.string({ minLength: 1, maxLength: 40 }).filter((q) => q.trim() !== ''),
        async (q) => {
          const results = await platform.search(q);
          expect(results.length).toBeGreaterThanOrEqual(1);
          expect(results.length).toBeLessThanOrEqual(10);
          expect(new Set(results.map((video) => video.id)).size).toBe(results.length);
          for (const video of results) {
            expect(videoBehaviour(video.id)).toBe('ordinary');
            expect(await platform.getVideo(video.id)).toEqual(video);
          }
          expect(await platform.search(`  ${q.toUpperCase()} `)).toEqual(await platform.search(q.toLowerCase()));
        },
      ),
      { numRuns: 30 },
    );
  });

  it('an empty query is 400 invalid_request', async () => {
    expect(await rejection(platform.search('   '))).toMatchObject({ ...badRequest, param: 'q' });
  });
});

/** Parses SRT or WebVTT cues back into [startMs, endMs, text]. */
function parseCues(body: string, kind: 'srt' | 'vtt'): [number, number, string][] {
  const mark = kind === 'srt' ? ',' : '\\.';
  const time = `(\\d{2}):(\\d{2}):(\\d{2})${mark}(\\d{3})`;
  const timing = new RegExp(`^${time} --> ${time}$`);
  const ms = (h?: string, m?: string, s?: string, f?: string) => ((Number(h) * 60 + Number(m)) * 60 + Number(s)) * 1000 + Number(f);
  let rest = body;
  if (kind === 'vtt') {
    expect(body.startsWith('WEBVTT\n\n')).toBe(true);
    rest = body.slice('WEBVTT\n\n'.length);
  }
  expect(rest.endsWith('\n\n')).toBe(true);
  return rest
    .slice(0, -2)
    .split('\n\n')
    .map((block, i) => {
      const lines = block.split('\n');
      if (kind === 'srt') expect(lines.shift()).toBe(String(i + 1));
      const match = timing.exec(lines.shift() ?? '');
      if (match === null) throw new Error(`cue ${i + 1} has no timing line: ${block}`);
      const [, h1, m1, s1, f1, h2, m2, s2, f2] = match;
      return [ms(h1, m1, s1, f1), ms(h2, m2, s2, f2), lines.join('\n')];
    });
}

describe('transcript formats (convert if a non-JSON format was asked)', () => {
  it.each(['srt', 'vtt'] as const)('%s output parses back: one cue per segment, timestamps monotonic', async (format) => {
    await fc.assert(
      fc.asyncProperty(ordinaryVideoIdArb, async (id) => {
        const transcript = await platform.getTranscript(id);
        const cues = parseCues(convertTranscript(transcript, format).body, format);
        expect(cues).toHaveLength(transcript.segments.length);
        let previousEnd = 0;
        cues.forEach(([start, end, text], i) => {
          const segment = transcript.segments[i];
          expect(start).toBeGreaterThanOrEqual(previousEnd);
          expect(end).toBeGreaterThan(start);
          expect(start).toBe(Math.round((segment?.start ?? NaN) * 1000));
          expect(end - start).toBe(Math.round((segment?.duration ?? NaN) * 1000));
          expect(text).toBe(segment?.text);
          previousEnd = end;
        });
      }),
      { numRuns: 20 },
    );
  });

  const handMade: Transcript = {
    video_id: 'handMade123',
    language: 'en',
    segments: [
      { start: 3723.5, duration: 2.25, text: 'one <b> & two\n\nthree' },
      { start: 3726, duration: 1, text: 'four' },
    ],
  };

  it('SRT uses HH:MM:SS,mmm and keeps multi-line text inside its cue', () => {
    const { body, contentType } = convertTranscript(handMade, 'srt');
    expect(contentType).toMatch(/^application\/x-subrip/);
    expect(body).toBe('1\n01:02:03,500 --> 01:02:05,750\none <b> & two\nthree\n\n' + '2\n01:02:06,000 --> 01:02:07,000\nfour\n\n');
  });

  it('WebVTT uses HH:MM:SS.mmm and escapes markup characters', () => {
    const { body, contentType } = convertTranscript(handMade, 'vtt');
    expect(contentType).toMatch(/^text\/vtt/);
    expect(body).toBe('WEBVTT\n\n' + '01:02:03.500 --> 01:02:05.750\none &lt;b&gt; &amp; two\nthree\n\n' + '01:02:06.000 --> 01:02:07.000\nfour\n\n');
  });

  it('text is the segment texts, one per line, and JSON is the transcript as fetched', () => {
    expect(convertTranscript(handMade, 'text')).toEqual({
      contentType: 'text/plain; charset=utf-8',
      body: 'one <b> & two\nthree\nfour\n',
    });
    expect(JSON.parse(convertTranscript(handMade, 'json').body)).toEqual(handMade);
  });

  it('a format other than json, text, srt or vtt is 400 invalid_request', () => {
    const format = 'docx' as unknown as 'json';
    expect(thrown(() => convertTranscript(handMade, format))).toMatchObject({
      ...badRequest,
      name: 'InvalidFormatError',
      param: 'format',
    });
  });
});

describe('errors', () => {
  it('each error type has its documented status', async () => {
    const transcript = await platform.getTranscript(BAD_CONVERSION);
    const errors = [
      await rejection(platform.getVideo('short')),
      await rejection(platform.getVideo(UNAVAILABLE)),
      await rejection(platform.getTranscript(NO_CAPTIONS)),
      await rejection(platform.getComments(COMMENTS_FAIL, { sort: 'top' })),
      thrown(() => convertTranscript(transcript, 'srt')),
    ];
    expect(errors.map(({ name, code, status }) => [name, code, status])).toEqual([
      ['InvalidIdError', 'invalid_request', 400],
      ['VideoUnavailableError', 'video_unavailable', 404],
      ['NoCaptionsError', 'no_captions', 404],
      ['UpstreamError', 'upstream_error', 502],
      ['ConversionError', 'upstream_error', 502],
    ]);
  });

  it('isPlatformError recognises an error from a duplicate install by name and code, not instanceof', () => {
    const copy = Object.assign(new Error('Video x has no captions'), {
      name: 'NoCaptionsError',
      code: 'no_captions',
      status: 404,
    });
    expect(isPlatformError(copy)).toBe(true);
    expect(isPlatformError({ ...copy, message: copy.message, code: 'upstream_error' })).toBe(false);
    expect(isPlatformError(new Error('plain'))).toBe(false);
    expect(isPlatformError(null)).toBe(false);
  });
});

describe('latency option', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('answers after latencyMs, not before', async () => {
    vi.useFakeTimers();
    const slow = createFakePlatform({ latencyMs: 50 });
    let answered = false;
    const answer = slow.getVideo(ORDINARY).then(() => {
      answered = true;
    });
    await vi.advanceTimersByTimeAsync(49);
    expect(answered).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await answer;
    expect(answered).toBe(true);
  });

  it('rejects a negative or non-finite latency', () => {
    expect(() => createFakePlatform({ latencyMs: -1 })).toThrow(RangeError);
    expect(() => createFakePlatform({ latencyMs: Number.NaN })).toThrow(RangeError);
  });
});
