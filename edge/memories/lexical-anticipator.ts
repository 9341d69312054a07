import { type AnticipationProvider, type AnticipationRequest, MAX_PREDICTIONS, type Prediction } from '../../shared/memories.ts';

// The embedded deterministic anticipator (issue 34, ADR-0168): lexical retrieval over the owner's
// active memories. The intent and every memory are reduced to terms (tokens, stop words dropped,
// light stemming, a small lexicon of related words); a memory is chosen when the terms it shares
// with the intent weigh at least RELEVANCE_THRESHOLD, each term weighted by its inverse document
// frequency over the owner's memories in the request (a word every memory holds says little).
// Each chosen memory becomes one prediction citing it and copying its statement exactly. No
// network, no clock, no randomness: the same request always gets the same answer. Tuned on the
// development corpus only (shared/memory-corpora/development.json).

/** The provider id evidence is recorded under (a changed retrieval after evidence is published needs a new id). */
export const EMBEDDED_ANTICIPATOR_ID = 'embedded-lexical/1';

/**
 * Least summed IDF weight of the terms a memory shares with the intent for it to be brought. One
 * shared term passes alone when at most about four in five of the memories hold it
 * (ln(1 + n/df) ≥ 0.8 when df ≤ 0.816 n); a word (nearly) every memory holds does not.
 */
export const RELEVANCE_THRESHOLD = 0.8;

/** Words that carry no topic: articles, pronouns, auxiliaries, prepositions, quantities, fillers. */
const STOP_WORDS = new Set(
  (
    'a about above after again against all also always am an and any are as at be because been before being below between both but by ' +
    'can cannot could did do does doing done down during each either else ever every few for from further get gets getting got had has have ' +
    'having he her here hers herself him himself his how i if in into is it its itself just last least less let like make me mine more most ' +
    'much must my myself need needs never next no nor not now of off on once one only or other our ours ourselves out over own per please ' +
    'same say she should so some such than that the their theirs them themselves then there these they this those through to too two under ' +
    'unless until up us use used very want was we well were what when where which while who whom why will with within without would yet you ' +
    'your yours yourself yourselves new same sure thing things time way week weeks today tonight tomorrow yesterday help'
  ).split(' '),
);

/**
 * The lexicon: related words (after stemming) read as one term, so an intent and a memory that
 * name the same thing differently still meet. Small and general on purpose: word families a
 * dictionary lists together, not facts about the world.
 */
const LEXICON: Readonly<Record<string, string>> = {
  // fly, flying, flyer, flight
  fly: 'flight',
  flyer: 'flight',
  flying: 'flight',
  // rent, rental, renting
  rental: 'rent',
  // deliver, delivery, redelivery
  redelivery: 'deliver',
  delivery: 'deliver',
  // pay, payment
  payment: 'pay',
  // appoint, appointment
  appointment: 'appoint',
  // subscribe, subscription, unsubscribe
  subscription: 'subscribe',
  unsubscribe: 'subscribe',
  // donate, donation
  donation: 'donate',
  // cancel, cancellation
  cancellation: 'cancel',
  // bank, banking
  banking: 'bank',
  // grocery, groceries
  groceries: 'grocery',
  // child, children, kid
  children: 'child',
  kid: 'child',
  // month, monthly; week, weekly; year, yearly
  monthly: 'month',
  yearly: 'year',
  // apply, application
  application: 'apply',
  // optician, optical
  optical: 'optician',
  // renew, renewal
  renewal: 'renew',
  // a restaurant booked for a meal: dinner, lunch
  dinner: 'restaurant',
  lunch: 'restaurant',
};

/** Irregular forms the suffix rules would get wrong, mapped to their stem. */
const IRREGULAR: Readonly<Record<string, string>> = {
  children: 'child',
  women: 'woman',
  men: 'man',
  feet: 'foot',
  teeth: 'tooth',
  lenses: 'lens',
  glasses: 'glasses',
  sunglasses: 'sunglasses',
  bus: 'bus',
  business: 'business',
  always: 'always',
};

/**
 * A word reduced to its stem by light suffix stripping: plural `-ies`/`-es`/`-s` (not `-ss`,
 * `-us`) and `-ing`; possessive forms are already removed by {@link terms}. Past forms (`-ed`)
 * are kept as they are: "the plumber is booked" is not about a book. Words of three letters or
 * fewer are kept.
 */
export function stem(word: string): string {
  const irregular = listed(IRREGULAR, word);
  if (irregular) return irregular;
  if (word.length <= 3) return word;
  if (word.endsWith('ies')) return `${word.slice(0, -3)}y`;
  if (/(sses|xes|ches|shes|zes)$/.test(word)) return word.slice(0, -2);
  const singular = word.endsWith('s') && !/(ss|us)$/.test(word) ? word.slice(0, -1) : word;
  // "weddings" is "wedding" first, then "wed", as "wedding" is: a plural of an -ing noun meets its singular.
  const agent = listed(AGENT_NOUNS, singular);
  if (agent) return agent;
  if (singular.endsWith('ing') && singular.length > 6) return undouble(singular.slice(0, -3));
  return singular;
}

/**
 * Agent nouns read as the verb they are made from, as a dictionary lists them together (a dog
 * walker walks dogs, a cleaner cleans): a suffix rule for `-er` would also cut "order", "winter"
 * and "paper", so these are listed.
 */
const AGENT_NOUNS: Readonly<Record<string, string>> = {
  walker: 'walk',
  cleaner: 'clean',
  driver: 'drive',
  gardener: 'garden',
  baker: 'bake',
  painter: 'paint',
  trainer: 'train',
  teacher: 'teach',
  sitter: 'sit',
  babysitter: 'babysit',
  renter: 'rent',
  buyer: 'buy',
  seller: 'sell',
  player: 'play',
  runner: 'run',
  swimmer: 'swim',
  hiker: 'hike',
  cyclist: 'cycle',
  mover: 'move',
  groomer: 'groom',
  builder: 'build',
  roofer: 'roof',
  installer: 'install',
  caterer: 'cater',
  photographer: 'photograph',
};

/** `word`'s entry in `table`, only when the table itself lists it (never an `Object.prototype` member such as `constructor`). */
function listed(table: Readonly<Record<string, string>>, word: string): string | undefined {
  return Object.hasOwn(table, word) ? table[word] : undefined;
}

/** `runn` → `run`, `cancell` → `cancel`: a doubled final consonant left by a stripped suffix. */
function undouble(word: string): string {
  return /([b-df-hj-np-tv-z])\1$/.test(word) ? word.slice(0, -1) : word;
}

/**
 * The terms of a text, each with the words it was read from: NFKC, lowercased, typographic
 * apostrophes plain, possessive `'s` dropped, split on anything but letters and digits, stop
 * words dropped, each word stemmed and read through the lexicon. Terms in order of appearance.
 */
export function terms(text: string): Map<string, Set<string>> {
  const words = text
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[\u2018\u2019\u201B]/g, "'")
    .replace(/'s\b/g, '')
    .split(/[^\p{L}\p{N}]+/u);
  const found = new Map<string, Set<string>>();
  for (const word of words) {
    if (word.length < 2 || STOP_WORDS.has(word)) continue;
    const stemmed = stem(word);
    if (STOP_WORDS.has(stemmed)) continue;
    const term = listed(LEXICON, word) ?? listed(LEXICON, stemmed) ?? stemmed;
    const from = found.get(term) ?? new Set<string>();
    from.add(word);
    found.set(term, from);
  }
  return found;
}

/** One memory's relevance to the intent: the summed IDF of the terms they share. */
export interface ScoredMemory {
  readonly id: string;
  readonly statement: string;
  readonly score: number;
}

/**
 * Every memory of `request` scored against its intent, highest first (ties in request order):
 * the sum over shared terms of ln(1 + n / df), n the number of memories and df how many of them
 * hold the term.
 */
function scoreMemories(request: AnticipationRequest): ScoredMemory[] {
  const intent = terms(request.intent);
  const memoryTerms = request.memories.map((memory) => terms(memory.statement));
  const frequency = new Map<string, number>();
  for (const held of memoryTerms) for (const term of held.keys()) frequency.set(term, (frequency.get(term) ?? 0) + 1);
  const n = request.memories.length;
  const scored = request.memories.map((memory, index) => {
    let score = 0;
    for (const [term, _words] of memoryTerms[index] as Map<string, Set<string>>) {
      if (!intent.has(term)) continue;
      score += Math.log(1 + n / (frequency.get(term) as number));
    }
    return { id: memory.id, statement: memory.statement, score, index };
  });
  scored.sort((a, b) => b.score - a.score || a.index - b.index);
  return scored.map(({ id, statement, score }) => ({ id, statement, score }));
}

/**
 * The predictions for `request`: one per memory scoring at least {@link RELEVANCE_THRESHOLD},
 * highest first, at most {@link MAX_PREDICTIONS}, each citing that memory's id and copying its
 * statement exactly. Only ids of the request's memories are ever cited.
 */
export function lexicalPredictions(request: AnticipationRequest): Prediction[] {
  const seen = new Set<string>();
  const predictions: Prediction[] = [];
  for (const memory of scoreMemories(request)) {
    if (memory.score < RELEVANCE_THRESHOLD || seen.has(memory.id)) continue;
    seen.add(memory.id);
    predictions.push({ memory_id: memory.id, statement: memory.statement });
    if (predictions.length === MAX_PREDICTIONS) break;
  }
  return predictions;
}

/**
 * The embedded deterministic anticipator (`embedded-lexical/1`): {@link lexicalPredictions} as an
 * {@link AnticipationProvider}, cost 0 USD. It never throws for a request that fits
 * {@link AnticipationRequest}.
 */
export const embeddedAnticipator: AnticipationProvider = {
  id: EMBEDDED_ANTICIPATOR_ID,
  anticipate(request) {
    return Promise.resolve({ predictions: lexicalPredictions(request), costUsd: 0 });
  },
};
