import { z } from 'zod';

/**
 * The words by which a page reads as a sign-in page (issue 17; ADR-0164 part 3): one reviewed,
 * bounded list, in English and the most used languages of the web. Words alone never park a run:
 * the host combines them with the page's fields and controls (browser-host
 * `site-verification/sign-in-evidence.ts`), so a "Sign in" link in a public header or a help
 * article about signing in is not a wall.
 *
 * Matching is on normalized text (Unicode NFKC, lower case, curly quotes straightened, runs of
 * white space as one space, leading and trailing punctuation dropped):
 * - `sign_in`: a text reads as sign-in when it *is* one of the phrases or *starts* with one
 *   followed by a separator (space, `:`, `-`, `|`, `·`, `,`, `.`, `!`) and at most 8 more words:
 *   "Sign in", "Sign in to Acme", "Log in | Acme"; not "Can't sign in?", "Sign up",
 *   "Signing in help". Scripts without spaces (Japanese, Chinese, Korean) also match when the
 *   phrase starts the text and the text has at most 12 more characters.
 * - `sign_in_ambiguous`: phrases that also mean something else; see {@link signInReading}.
 * - `single_sign_on` + `identity_providers`: a button or link names a single-sign-on choice when
 *   its text is a prefix (each ending in a space) followed by a provider or method ("Continue with
 *   Google", "Sign in with SSO"), or one of `single_sign_on_exact` ("Single sign-on").
 * - `passkey` + `passkey_use`: a button or link offers a passkey when its text names one and says
 *   to use it ("Use a passkey"), without a settings verb ({@link PASSKEY_SETTINGS}).
 *
 * An operator adds phrases (never removes built-in ones) with the `sign_in_words` object of the
 * host's site catalog file (README "Sign-in walls").
 */
/** Single-sign-on prefixes that say "sign in" themselves ("Sign in with ", "Войти через "). */
const SIGN_IN_WITH = [
  'sign in with ',
  'log in with ',
  'login with ',
  'sign on with ',
  'sign in using ',
  'log in using ',
  'se connecter avec ',
  'iniciar sesión con ',
  'accedi con ',
  'inloggen met ',
  'zaloguj się przez ',
  'войти через ',
];

export const BUILT_IN_SIGN_IN_WORDS = {
  sign_in: [
    // English
    'sign in',
    'sign-in',
    'signin',
    'log in',
    'log-in',
    'login',
    'log on',
    'logon',
    'sign on',
    // German
    'einloggen',
    // French
    'se connecter',
    'connexion',
    "s'identifier",
    'identifiez-vous',
    'connectez-vous',
    // Spanish
    'iniciar sesión',
    'inicia sesión',
    'inicie sesión',
    // Portuguese
    'iniciar sessão',
    'fazer login',
    // Italian
    'accedi',
    // Dutch
    'inloggen',
    // Polish
    'zaloguj się',
    'logowanie',
    // Russian, Ukrainian
    'войти',
    'вход',
    'увійти',
    // Turkish
    'giriş yap',
    'oturum aç',
    // Swedish, Danish, Norwegian
    'logga in',
    'log ind',
    'logg inn',
    // Czech
    'přihlásit se',
    'přihlášení',
    // Japanese
    'ログイン',
    'サインイン',
    // Chinese
    '登录',
    '登入',
    '登錄',
    // Korean
    '로그인',
    // Arabic, Persian
    'تسجيل الدخول',
    // Hindi
    'लॉग इन',
    'साइन इन',
    // Indonesian, Malay
    // Vietnamese
    'đăng nhập',
    // Thai
    'เข้าสู่ระบบ',
  ],
  /**
   * Sign-in phrases that also mean something else ("Anmelden" is also "subscribe", "Entrar em
   * contato" is "get in touch"): a form's heading or button reading so counts only with a second
   * sign that the page is about signing in (its title or another heading or button).
   */
  sign_in_ambiguous: ['anmelden', 'anmeldung', 'aanmelden', 'entrar', 'acceder', 'ingresar', 'accesso', 'masuk', 'ورود'],
  single_sign_on: [
    'continue with ',
    'weiter mit ',
    'continuer avec ',
    'continuar con ',
    'continuar com ',
    'entrar com ',
    'continua con ',
    'doorgaan met ',
    'продолжить с ',
    ...SIGN_IN_WITH,
  ],
  /**
   * Who a single-sign-on choice names after its prefix ("Continue with Google"): the identity
   * providers and sign-in methods people are offered; "Continue with lesson 2" or "Continue with
   * necessary cookies only" name none. An optional "account" or "ID" may follow.
   */
  identity_providers: [
    'google',
    'apple',
    'microsoft',
    'facebook',
    'meta',
    'github',
    'gitlab',
    'bitbucket',
    'x',
    'twitter',
    'linkedin',
    'amazon',
    'yahoo',
    'okta',
    'auth0',
    'onelogin',
    'slack',
    'discord',
    'line',
    'kakao',
    'naver',
    'wechat',
    'alipay',
    'vk',
    'yandex',
    'sso',
    'saml',
    'single sign-on',
    'your organization',
    'your company',
    'work or school account',
    'email',
    'e-mail',
    'phone',
    'a passkey',
    'passkey',
  ],
  /**
   * The `single_sign_on` prefixes that say "sign in" themselves: followed by any name of one to
   * four words they are a single-sign-on choice, a provider the lists do not know included
   * ("Sign in with Acme ID", "Log in with Keycloak": a company's own identity provider), where
   * "Continue with ..." needs a known provider or method.
   */
  single_sign_on_any_provider: SIGN_IN_WITH,
  /** Texts that are a single-sign-on choice on their own. */
  single_sign_on_exact: ['single sign-on', 'single sign on', 'use single sign-on', 'sso', 'sso login', 'log in with sso', 'sign in with sso'],
  passkey: [
    'passkey',
    'security key',
    "clé d'accès",
    'llave de acceso',
    'clave de acceso',
    'chave de acesso',
    'パスキー',
    '通行密钥',
    '密碼金鑰',
    '패스키',
    'ключ доступа',
  ],
  /**
   * A passkey name counts as a sign-in choice only with a word of using it ("Use a passkey",
   * "Sign in with a passkey", "Passkey verwenden"), never in a link that only names the topic
   * ("Passkeys") or a settings action ("Add a passkey", which {@link PASSKEY_SETTINGS} refuses).
   */
  passkey_use: [
    'use',
    'with',
    'using',
    'sign in',
    'log in',
    'continue',
    'verwenden',
    'mit',
    'utiliser',
    'avec',
    'usar',
    'con',
    'com',
    'usa',
    'gebruik',
    'met',
    'użyj',
    'использовать',
    'で',
    '使用',
    '사용',
  ],
} as const satisfies Record<string, readonly string[]>;

/** Settings verbs: a passkey text starting with one of these manages passkeys, it does not sign in. */
export const PASSKEY_SETTINGS: readonly string[] = [
  'add',
  'create',
  'set up',
  'setup',
  'manage',
  'remove',
  'delete',
  'register',
  'rename',
  'new',
  'learn',
  'about',
  'what is',
  'what are',
  'hinzufügen',
  'ajouter',
  'agregar',
  'añadir',
  'adicionar',
  'aggiungi',
  'toevoegen',
];

const Phrase = z
  .string()
  .min(2)
  .max(60)
  .refine((phrase) => normalizeSignInText(phrase) !== '', 'a phrase needs letters');

/**
 * The `sign_in_words` object of a site catalog file: phrases an operator adds to the built-in
 * lists ({@link BUILT_IN_SIGN_IN_WORDS}), at most 200 per list, 2-60 characters each.
 */
export const SignInWordAdditions = z.strictObject({
  sign_in: z.array(Phrase).max(200).default([]),
  sign_in_ambiguous: z.array(Phrase).max(200).default([]),
  single_sign_on: z.array(Phrase).max(200).default([]),
  identity_providers: z.array(z.string().min(1).max(60)).max(200).default([]),
  passkey: z.array(Phrase).max(200).default([]),
});
export type SignInWordAdditions = z.infer<typeof SignInWordAdditions>;

/** The lists in use: built-in phrases plus an operator's, normalized. */
export interface SignInWords {
  readonly signIn: readonly string[];
  readonly signInAmbiguous: readonly string[];
  readonly singleSignOn: readonly string[];
  readonly singleSignOnAnyProvider: readonly string[];
  readonly singleSignOnExact: readonly string[];
  readonly identityProviders: readonly string[];
  readonly passkey: readonly string[];
  readonly passkeyUse: readonly string[];
}

/** The built-in lists plus `additions`, normalized (see {@link normalizeSignInText}); duplicates kept once. */
export function signInWords(additions?: SignInWordAdditions): SignInWords {
  const merge = (built: readonly string[], added: readonly string[] = [], keepTrailingSpace = false) => [
    ...new Set(
      [...built, ...added].map((phrase) => {
        const normalized = normalizeSignInText(phrase);
        // A prefix keeps its trailing space: "weiter mit " must not match "weiter mitmachen".
        return keepTrailingSpace ? `${normalized} ` : normalized;
      }),
    ),
  ];
  return {
    signIn: merge(BUILT_IN_SIGN_IN_WORDS.sign_in, additions?.sign_in),
    signInAmbiguous: merge(BUILT_IN_SIGN_IN_WORDS.sign_in_ambiguous, additions?.sign_in_ambiguous),
    singleSignOn: merge(BUILT_IN_SIGN_IN_WORDS.single_sign_on, additions?.single_sign_on, true),
    singleSignOnAnyProvider: merge(BUILT_IN_SIGN_IN_WORDS.single_sign_on_any_provider, [], true),
    singleSignOnExact: merge(BUILT_IN_SIGN_IN_WORDS.single_sign_on_exact),
    identityProviders: merge(BUILT_IN_SIGN_IN_WORDS.identity_providers, additions?.identity_providers),
    passkey: merge(BUILT_IN_SIGN_IN_WORDS.passkey, additions?.passkey),
    passkeyUse: merge(BUILT_IN_SIGN_IN_WORDS.passkey_use),
  };
}

/** Names after "Sign in with" that are not a provider's: "your work account", "another account", "a magic link". */
const NOT_A_PROVIDER = /^(?:your|my|our|their|his|her|another|other|a|an|the|this|that|different|same|new)\b/u;

/** Longest text compared, in characters: a heading or a button, never a paragraph. */
const MAX_COMPARED_CHARS = 160;
const SEPARATOR = /^[\s:|·,.!–—-]/;

/** The last text {@link normalizeSignInText} was asked about and its answer: a name is asked about by several checks in a row. */
let lastNormalized: { readonly text: string; readonly normalized: string } | undefined;

/** NFKC, lower case, straight quotes, one space between words, no leading or trailing punctuation. */
export function normalizeSignInText(text: string): string {
  if (lastNormalized?.text !== text) lastNormalized = { text, normalized: normalizedSignInText(text) };
  return lastNormalized.normalized;
}

function normalizedSignInText(text: string): string {
  return text
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[\u2018\u2019\u02bc]/g, "'")
    .replace(/\s+/g, ' ')
    .replace(/^[\s\p{P}\p{S}]+|[\s\p{P}\p{S}]+$/gu, '');
}

/**
 * How `text` (a title, heading or button) reads as sign-in: `clear` when it is, or starts with, a
 * sign-in phrase (see {@link BUILT_IN_SIGN_IN_WORDS}); `ambiguous` when the phrase also means
 * something else; undefined when it does not read as sign-in. A phrase followed by "&" or "and"
 * ("Login & security") names a topic, not a sign-in.
 */
export function signInReading(text: string, words: SignInWords): 'clear' | 'ambiguous' | undefined {
  if (text.length > MAX_COMPARED_CHARS) return undefined;
  const normalized = normalizeSignInText(text);
  const starts = (phrase: string): boolean => {
    if (normalized === phrase) return true;
    if (!normalized.startsWith(phrase)) return false;
    const rest = normalized.slice(phrase.length);
    if (!/\s/.test(phrase) && /^[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u.test(phrase)) return rest.length <= 12;
    if (/^\s*(?:&|and\b)/.test(rest)) return false;
    return SEPARATOR.test(rest) && rest.trim().split(/\s+/).length <= 8;
  };
  if (words.signIn.some(starts)) return 'clear';
  if (words.signInAmbiguous.some(starts)) return 'ambiguous';
  return undefined;
}

/** True when `text` (a title, heading or button) reads as sign-in, clearly or not (see {@link signInReading}). */
export function readsAsSignIn(text: string, words: SignInWords): boolean {
  return signInReading(text, words) !== undefined;
}

/**
 * True when `text` (a button or link) names a single-sign-on choice: a prefix ("Continue with ",
 * "Sign in with ", ...) followed by an identity provider or sign-in method and at most "account"
 * or "ID" ("Continue with Google", "Sign in with SSO"), with `anyProvider` (a button, not a link:
 * links to articles about signing in say the same words) a prefix that says "sign in" itself
 * followed by a name of one to four words that is not "your ...", "another ..." and the like
 * ("Sign in with Acme ID"; see `single_sign_on_any_provider`), or one of the exact phrases
 * ("Single sign-on"). With `leading`,
 * the choice may be followed by more after a separator ("Sign in with Apple - Apple Developer"):
 * used for titles and headings, which then name the choice, not a page; there a provider must be
 * a known one.
 */
export function namesSingleSignOn(text: string, words: SignInWords, leading = false, anyProvider = false): boolean {
  if (text.length > MAX_COMPARED_CHARS) return false;
  const normalized = normalizeSignInText(text);
  if (words.singleSignOnExact.includes(normalized)) return true;
  const namesAny =
    anyProvider &&
    !leading &&
    words.singleSignOnAnyProvider.some((prefix) => {
      if (!`${normalized} `.startsWith(prefix)) return false;
      const name = normalized.slice(prefix.length).trim();
      return /^[\p{L}\p{N}][\p{L}\p{N} .'&-]*$/u.test(name) && name.split(/\s+/).length <= 4 && !NOT_A_PROVIDER.test(name);
    });
  if (namesAny) return true;
  return words.singleSignOn.some((prefix) => {
    if (!`${normalized} `.startsWith(prefix)) return false;
    const rest = normalized.slice(prefix.length).replace(/\s+(?:account|id)$/, '');
    return words.identityProviders.some(
      (provider) => rest === provider || (leading && rest.startsWith(provider) && SEPARATOR.test(rest.slice(provider.length))),
    );
  });
}

/**
 * True when `text` (a button or link) offers signing in with a passkey or security key: it names
 * one and says to use it ("Use a passkey", "Sign in with a security key"), and does not start
 * with a settings verb ("Add a passkey"; see {@link PASSKEY_SETTINGS}).
 */
export function namesPasskey(text: string, words: SignInWords): boolean {
  if (text.length > MAX_COMPARED_CHARS) return false;
  const normalized = normalizeSignInText(text);
  if (!words.passkey.some((phrase) => normalized.includes(phrase))) return false;
  if (PASSKEY_SETTINGS.some((verb) => normalized === verb || normalized.startsWith(`${verb} `))) return false;
  return words.passkeyUse.some((word) => (/^[a-zà-ÿ]/.test(word) ? new RegExp(`(?:^|\\s)${word}(?:\\s|$)`).test(normalized) : normalized.includes(word)));
}
