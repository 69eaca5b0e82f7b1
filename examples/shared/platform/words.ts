/** Word lists the fake platform composes titles, names and text from. */
import type { Rng } from './hash.ts';

const TOPICS = [
  'sourdough',
  'rust',
  'redis',
  'woodworking',
  'chess openings',
  'houseplants',
  'espresso',
  'synthesizers',
  'bouldering',
  'tax returns',
  'mechanical keyboards',
  'sailing',
  'pottery',
  'typescript',
  'bike repair',
  'film cameras',
  'bread ovens',
  'home networking',
  'knitting',
  'astronomy',
  'fermentation',
  'guitar pedals',
  'trail running',
  'watercolour',
  'budgeting',
] as const;

const TITLE_FORMS = [
  (t: string) => `${cap(t)} for complete beginners`,
  (t: string) => `I tried ${t} for 30 days`,
  (t: string) => `Everything wrong with ${t}`,
  (t: string) => `${cap(t)}: the 10 mistakes I made`,
  (t: string) => `Why ${t} is harder than it looks`,
  (t: string) => `A calm introduction to ${t}`,
  (t: string) => `${cap(t)} in under 15 minutes`,
  (t: string) => `The honest truth about ${t}`,
] as const;

const OPENERS = ['so', 'okay', 'right', 'now', 'and then', 'the thing is', 'honestly', 'basically', 'first'] as const;
const SUBJECTS = ['we', 'you', 'I', 'most people', 'the manual', 'my friend', 'this one'] as const;
const VERBS = [
  'want to check',
  'tend to forget',
  'should look at',
  'can skip',
  'need to measure',
  'will notice',
  'keep coming back to',
  'underestimate',
  'talk about',
] as const;
const OBJECTS = [
  'the first step',
  'the temperature',
  'this little detail',
  'the timing',
  'the cheap option',
  'what happens next',
  'the edge',
  'the whole setup',
  'the results',
  'the second attempt',
] as const;

const REACTIONS = [
  'This helped a lot, thank you!',
  'Finally someone explains it properly.',
  'I disagree with the part at the end.',
  'Watched this three times already.',
  'Can you do a follow-up on this?',
  'The audio is a bit quiet around the middle.',
  'Saved me an afternoon of trial and error.',
  'Who else is here after the update?',
  'Great pacing, no filler.',
  'I tried this and it did not work for me.',
  'The diagram at the start is gold.',
  'Underrated channel.',
] as const;
const REPLIES = [
  'Same here.',
  'Agreed!',
  'Did you try it the other way round?',
  'Thanks, that fixed it.',
  'Not in my experience.',
  'Check the pinned comment.',
  'Ha, exactly.',
  'Source?',
] as const;

const NAMES = [
  'ada',
  'brook',
  'cedar',
  'dune',
  'ember',
  'fjord',
  'grove',
  'heron',
  'iris',
  'juniper',
  'kestrel',
  'lumen',
  'moss',
  'nova',
  'orbit',
  'pixel',
  'quill',
  'reed',
  'sable',
  'tide',
] as const;

function cap(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

export function videoTitle(rng: Rng): string {
  return rng.pick(TITLE_FORMS)(rng.pick(TOPICS));
}

export function spokenLine(rng: Rng): string {
  return `${cap(rng.pick(OPENERS))} ${rng.pick(SUBJECTS)} ${rng.pick(VERBS)} ${rng.pick(OBJECTS)}`;
}

export function authorName(rng: Rng): string {
  return `@${rng.pick(NAMES)}${rng.pick(NAMES)}${rng.int(1, 9999)}`;
}

export function commentText(rng: Rng): string {
  return rng.next() < 0.5 ? rng.pick(REACTIONS) : `${rng.pick(REACTIONS)} ${rng.pick(REACTIONS)}`;
}

export function replyText(rng: Rng): string {
  return rng.pick(REPLIES);
}
