import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { Model } from '@kubernetes-models/base';
import { StatefulSet } from 'kubernetes-models/apps/v1/StatefulSet';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Secret } from 'kubernetes-models/v1/Secret';
import { Service } from 'kubernetes-models/v1/Service';
import ts from 'typescript';
import { parseAllDocuments } from 'yaml';

/**
 * Offline checks of Kubernetes manifests (no cluster): each object against the Kubernetes API's
 * OpenAPI schema as the npm package `kubernetes-models` compiles it (types, required fields,
 * enums, formats), and, because those schemas let unknown fields through where `kubectl apply`
 * (strict field validation) refuses them, each object against the same package's TypeScript types
 * with TypeScript's excess-property check, which names a misspelt field at any depth.
 */

/** One object of a manifest file. */
export interface ManifestObject {
  /** Path from the repository root, e.g. `deploy/kubernetes/service.yaml`. */
  readonly file: string;
  /** Position of the document in its file, from 0. */
  readonly index: number;
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  /** The object as parsed (plain JSON values). */
  readonly body: Record<string, unknown>;
}

/** The kinds these checks know: `apiVersion/kind` → the model class and the module of its type. */
const KINDS: Record<string, { model: new (data: never) => Model<unknown>; module: string; type: string }> = {
  'v1/ConfigMap': { model: ConfigMap, module: 'kubernetes-models/v1/ConfigMap', type: 'IConfigMap' },
  'v1/Secret': { model: Secret, module: 'kubernetes-models/v1/Secret', type: 'ISecret' },
  'v1/Service': { model: Service, module: 'kubernetes-models/v1/Service', type: 'IService' },
  'apps/v1/StatefulSet': { model: StatefulSet, module: 'kubernetes-models/apps/v1/StatefulSet', type: 'IStatefulSet' },
  'policy/v1/PodDisruptionBudget': { model: PodDisruptionBudget, module: 'kubernetes-models/policy/v1/PodDisruptionBudget', type: 'IPodDisruptionBudget' },
  'networking.k8s.io/v1/NetworkPolicy': { model: NetworkPolicy, module: 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy', type: 'INetworkPolicy' },
};

/**
 * Every object in the `.yaml` files of `dir` (not `kustomization.yaml`, which is kustomize's, not
 * the API's), in file-name order. `root` is what paths are given relative to.
 * @throws Error naming the file when a document does not parse as YAML or is not an object with
 *   `apiVersion`, `kind` and `metadata.name`.
 */
export function readManifests(root: string, dir: string): ManifestObject[] {
  const files = readdirSync(join(root, dir))
    .filter((name) => name.endsWith('.yaml') && name !== 'kustomization.yaml')
    .sort();
  return files.flatMap((name) => {
    const file = join(dir, name);
    return parseAllDocuments(readFileSync(join(root, file), 'utf8')).map((document, index) => {
      if (document.errors.length > 0) throw new Error(`${file}#${index}: ${document.errors.map((error) => error.message).join('; ')}`);
      const body = document.toJSON() as Record<string, unknown> | null;
      const metadata = body?.metadata as { name?: unknown } | undefined;
      if (!body || typeof body.apiVersion !== 'string' || typeof body.kind !== 'string' || typeof metadata?.name !== 'string') {
        throw new Error(`${file}#${index}: not a Kubernetes object (apiVersion, kind and metadata.name are required)`);
      }
      return { file, index, apiVersion: body.apiVersion, kind: body.kind, name: metadata.name, body };
    });
  });
}

/** Where an object is, for messages: `deploy/kubernetes/service.yaml#0 Service/browser-hosts`. */
export function whereIs(object: ManifestObject): string {
  return `${object.file}#${object.index} ${object.kind}/${object.name}`;
}

/**
 * The schema violations of `object` (empty when it validates), each `<where>: <path> <message>`;
 * a kind these checks do not know is one violation too, so a new kind cannot pass unchecked.
 */
export function schemaProblems(object: ManifestObject): string[] {
  const known = KINDS[`${object.apiVersion}/${object.kind}`];
  if (!known) return [`${whereIs(object)}: no schema known for ${object.apiVersion} ${object.kind} (add it to KINDS)`];
  try {
    new known.model(object.body as never).validate();
    return [];
  } catch (error) {
    return [`${whereIs(object)}: ${error instanceof Error ? error.message : String(error)}`];
  }
}

/**
 * Fields of `objects` that their kind's type does not have (misspelt or misplaced), found by
 * type-checking each object as a literal of its `kubernetes-models` interface; each problem is
 * `<where>: <TypeScript's message>`. Objects of unknown kinds are left to {@link schemaProblems}.
 * Takes a few seconds: one TypeScript program for all of them.
 */
export function unknownFieldProblems(root: string, objects: readonly ManifestObject[]): string[] {
  const checked = objects.filter((object) => KINDS[`${object.apiVersion}/${object.kind}`]);
  const lines = checked.map((object, i) => {
    const { module, type } = KINDS[`${object.apiVersion}/${object.kind}`]!;
    return `export const object${i}: import('${module}').${type} = ${JSON.stringify(object.body)};`;
  });
  const fileName = join(root, 'deploy', '__manifest-types__.ts');
  const source = lines.join('\n');
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    lib: ['lib.es2022.d.ts'],
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, language, ...rest) => (name === fileName ? ts.createSourceFile(name, source, language) : getSourceFile(name, language, ...rest));
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => name === fileName || fileExists(name);
  const program = ts.createProgram([fileName], options, host);
  const sourceFile = program.getSourceFile(fileName)!;
  return [...program.getSyntacticDiagnostics(sourceFile), ...program.getSemanticDiagnostics(sourceFile)].map((diagnostic) => {
    const line = diagnostic.start === undefined ? undefined : sourceFile.getLineAndCharacterOfPosition(diagnostic.start).line;
    const where = line === undefined ? relative(root, fileName) : whereIs(checked[line]!);
    return `${where}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, ' ')}`;
  });
}
