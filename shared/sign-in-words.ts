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
 * - `single_sign_on`: a button or link names a single-sign-on choice when its text starts with one
 *   of these prefixes, each ending in a space ("Continue with Google", "Sign in with SSO"), or is
 *   one of them without that space ("Single sign-on").
 * - `passkey`: a button or link names a passkey when its text contains one of these.
 *
 * An operator adds phrases (never removes built-in ones) with the `sign_in_words` object of the
 * host's site catalog file (README "Sign-in walls").
 */
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
    'anmelden',
    'anmeldung',
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
    'acceder',
    'ingresar',
    // Portuguese
    'entrar',
    'iniciar sessão',
    'fazer login',
    // Italian
    'accedi',
    'accesso',
    // Dutch
    'inloggen',
    'aanmelden',
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
    'ورود',
    // Hindi
    'लॉग इन',
    'साइन इन',
    // Indonesian, Malay
    'masuk',
    // Vietnamese
    'đăng nhập',
    // Thai
    'เข้าสู่ระบบ',
  ],
  single_sign_on: [
    'continue with ',
    'sign in with ',
    'log in with ',
    'login with ',
    'sign on with ',
    'sign in using ',
    'log in using ',
    'single sign-on ',
    'single sign on ',
    'use single sign-on ',
    'sign in with sso ',
    'weiter mit ',
    'continuer avec ',
    'se connecter avec ',
    'continuar con ',
    'iniciar sesión con ',
    'continuar com ',
    'entrar com ',
    'continua con ',
    'accedi con ',
    'doorgaan met ',
    'inloggen met ',
    'zaloguj się przez ',
    'войти через ',
    'продолжить с ',
  ],
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
} as const satisfies Record<string, readonly string[]>;

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
  single_sign_on: z.array(Phrase).max(200).default([]),
  passkey: z.array(Phrase).max(200).default([]),
});
export type SignInWordAdditions = z.infer<typeof SignInWordAdditions>;

/** The lists in use: built-in phrases plus an operator's, normalized. */
export interface SignInWords {
  readonly signIn: readonly string[];
  readonly singleSignOn: readonly string[];
  readonly passkey: readonly string[];
}

/** The built-in lists plus `additions`, normalized (see {@link normalizeSignInText}); duplicates kept once. */
export function signInWords(additions?: SignInWordAdditions): SignInWords {
  const merge = (built: readonly string[], added: readonly string[] = [], keepTrailingSpace = false) => [
    ...new Set(
      [...built, ...added].map((phrase) => {
        const normalized = normalizeSignInText(phrase);
        // A prefix keeps its trailing space: "mit " must not match "mitglied".
        return keepTrailingSpace ? `${normalized} ` : normalized;
      }),
    ),
  ];
  return {
    signIn: merge(BUILT_IN_SIGN_IN_WORDS.sign_in, additions?.sign_in),
    singleSignOn: merge(BUILT_IN_SIGN_IN_WORDS.single_sign_on, additions?.single_sign_on, true),
    passkey: merge(BUILT_IN_SIGN_IN_WORDS.passkey, additions?.passkey),
  };
}

/** Longest text compared, in characters: a heading or a button, never a paragraph. */
const MAX_COMPARED_CHARS = 160;
const SEPARATOR = /^[\s:|·,.!–—-]/;

/** NFKC, lower case, straight quotes, one space between words, no leading or trailing punctuation. */
export function normalizeSignInText(text: string): string {
  return text
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[\u2018\u2019\u02bc]/g, "'")
    .replace(/\s+/g, ' ')
    .replace(/^[\s\p{P}\p{S}]+|[\s\p{P}\p{S}]+$/gu, '');
}

/** True when `text` (a title, heading or button) reads as sign-in (see {@link BUILT_IN_SIGN_IN_WORDS}). */
export function readsAsSignIn(text: string, words: SignInWords): boolean {
  if (text.length > MAX_COMPARED_CHARS) return false;
  const normalized = normalizeSignInText(text);
  return words.signIn.some((phrase) => {
    if (normalized === phrase) return true;
    if (!normalized.startsWith(phrase)) return false;
    const rest = normalized.slice(phrase.length);
    if (!/\s/.test(phrase) && /^[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u.test(phrase)) {
      return rest.length <= 12;
    }
    return SEPARATOR.test(rest) && rest.trim().split(/\s+/).length <= 8;
  });
}

/** True when `text` (a button or link) names a single-sign-on choice. */
export function namesSingleSignOn(text: string, words: SignInWords): boolean {
  if (text.length > MAX_COMPARED_CHARS) return false;
  const normalized = `${normalizeSignInText(text)} `;
  return words.singleSignOn.some((prefix) => normalized.startsWith(prefix));
}

/** True when `text` (a button or link) names a passkey or security key. */
export function namesPasskey(text: string, words: SignInWords): boolean {
  if (text.length > MAX_COMPARED_CHARS) return false;
  const normalized = normalizeSignInText(text);
  return words.passkey.some((phrase) => normalized.includes(phrase));
}
