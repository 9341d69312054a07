import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DockerfileParser, type Instruction, type JSONInstruction } from 'dockerfile-ast';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { parseHostConfig } from '../../browser-host/config.ts';
import { DEFAULT_EDGE_CONFIG } from '../../edge/ports.ts';
import { CEREMONY_TIMEOUT_MS } from '../../edge/sign-in/ceremony.ts';
import { NODE_VERSION } from '../../scripts/toolchain.mjs';
import { MIN_SHARED_SECRET_BYTES } from '../../shared/wire-auth.ts';
import { type ManifestObject, readManifests, schemaProblems, unknownFieldProblems } from '../support/kubernetes-manifests.ts';

// The deployment definitions checked offline, no cluster and no Docker daemon: the Kubernetes
// manifests against the API's schemas (kubernetes-models), the Dockerfile through a real parser
// (dockerfile-ast), and the relations no schema sees: names that must match across files, the
// image's user and port against the pod's, the pod's environment against the host's own
// configuration parser, the drain script against package.json.

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const KUBERNETES_DIR = 'deploy/kubernetes';
const DOCKERFILE = 'deploy/host/Dockerfile';
const packageJson = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  scripts: Record<string, string>;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

const objects = readManifests(root, KUBERNETES_DIR);
const one = (kind: string, file?: string): ManifestObject => {
  const found = objects.filter((object) => object.kind === kind && (file === undefined || object.file.endsWith(file)));
  if (found.length !== 1) throw new Error(`expected one ${kind}${file ? ` in ${file}` : ''}, found ${found.length}`);
  return found[0]!;
};

// Typed views of the parts the relations read (the schemas already checked the shapes).
interface Labels {
  [key: string]: string;
}
interface Container {
  name: string;
  image: string;
  workingDir?: string;
  ports: Array<{ name: string; containerPort: number }>;
  env: Array<{ name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string }; secretKeyRef?: { name: string; key: string } } }>;
  envFrom?: Array<{ configMapRef?: { name: string } }>;
  lifecycle?: { preStop?: { exec?: { command: string[] } } };
  readinessProbe?: { exec?: { command: string[] } };
  livenessProbe?: { exec?: { command: string[] } };
  securityContext?: { readOnlyRootFilesystem?: boolean; allowPrivilegeEscalation?: boolean };
  volumeMounts: Array<{ name: string; mountPath: string }>;
}
const statefulSet = one('StatefulSet').body as {
  spec: {
    serviceName: string;
    selector: { matchLabels: Labels };
    template: {
      metadata: { labels: Labels };
      spec: {
        terminationGracePeriodSeconds: number;
        securityContext: { runAsNonRoot: boolean; runAsUser: number; runAsGroup: number };
        containers: Container[];
        volumes: Array<{ name: string }>;
      };
    };
  };
};
const service = one('Service').body as {
  metadata: { name: string };
  spec: { clusterIP: string; publishNotReadyAddresses: boolean; selector: Labels; ports: Array<{ port: number; targetPort: string | number }> };
};
const pdb = one('PodDisruptionBudget').body as { spec: { maxUnavailable?: number; minAvailable?: number; selector: { matchLabels: Labels } } };
const networkPolicy = one('NetworkPolicy').body as {
  spec: { podSelector: { matchLabels: Labels }; ingress: Array<{ ports: Array<{ port: string | number }> }> };
};
const configMap = one('ConfigMap').body as { metadata: { name: string }; data: Record<string, string> };
const secretExample = one('Secret', 'secret.example.yaml').body as { metadata: { name: string }; stringData: Record<string, string> };
const podLabels = statefulSet.spec.template.metadata.labels;
const [container] = statefulSet.spec.template.spec.containers;
if (!container) throw new Error('the StatefulSet has no container');

const dockerfile = DockerfileParser.parse(readFileSync(join(root, DOCKERFILE), 'utf8'));
const instructions = dockerfile.getInstructions();
const finalStage = instructions.slice(instructions.lastIndexOf(dockerfile.getFROMs().at(-1)!));
const argumentsOf = (instruction: Instruction) => instruction.getExpandedArguments().map((argument) => argument.getValue());
const jsonOf = (instruction: Instruction | undefined) => (instruction as JSONInstruction | undefined)?.getJSONStrings().map((part) => part.getJSONValue());
/** The exec-form command of the image's HEALTHCHECK (`HEALTHCHECK [flags] CMD ["...", ...]`). */
const healthcheckCommand = (): unknown => {
  const words = argumentsOf(dockerfile.getHEALTHCHECKs()[0]!);
  return JSON.parse(words.slice(words.indexOf('CMD') + 1).join(' '));
};
const finalOf = (keyword: string) => finalStage.filter((instruction) => instruction.getKeyword() === keyword);
const imageEnv = Object.fromEntries(
  dockerfile
    .getENVs()
    .filter((env) => finalStage.includes(env))
    .flatMap((env) => env.getProperties().map((property) => [property.getName(), property.getValue() ?? ''])),
);
const imageUser = argumentsOf(finalOf('USER').at(-1)!)[0]!;
const imageCopies = dockerfile.getCOPYs().filter((copy) => finalStage.includes(copy) && copy.getFromFlag() === null);
/** What the final image holds of the repository: every COPY source (files and directories). */
const copiedPaths = imageCopies.flatMap((copy) => argumentsOf(copy).slice(0, -1));
const isCopied = (path: string) => copiedPaths.some((copied) => path === copied || path.startsWith(`${copied}/`));

/** Every module specifier imported by the `.ts` files under `dir` (relative to the root), with the file importing it. */
function importsUnder(dir: string): Array<{ file: string; specifier: string }> {
  const found: Array<{ file: string; specifier: string }> = [];
  for (const entry of readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })) {
    const file = join(dir, entry);
    if (!file.endsWith('.ts') || !statSync(join(root, file)).isFile()) continue;
    for (const imported of ts.preProcessFile(readFileSync(join(root, file), 'utf8'), true, false).importedFiles)
      found.push({ file, specifier: imported.fileName });
  }
  return found;
}

describe('the Kubernetes manifests', () => {
  it('every object validates against its Kubernetes API schema', () => {
    expect(objects.map((object) => `${object.kind}/${object.name}`).sort()).toEqual([
      'ConfigMap/browser-host-config',
      'NetworkPolicy/browser-host-wire',
      'PodDisruptionBudget/browser-host',
      'Secret/browser-host-secret',
      'Service/browser-hosts',
      'StatefulSet/browser-host',
    ]);
    expect(objects.flatMap(schemaProblems)).toEqual([]);
  });

  it('no object has a field its kind does not know (kubectl apply refuses unknown fields)', () => {
    expect(unknownFieldProblems(root, objects)).toEqual([]);
  });

  it('kustomization.yaml applies every manifest but the Secret example, and sets the image the pods run', () => {
    const kustomization = parseYaml(readFileSync(join(root, KUBERNETES_DIR, 'kustomization.yaml'), 'utf8')) as {
      resources: string[];
      images: Array<{ name: string }>;
    };
    const files = [...new Set(objects.map((object) => relative(KUBERNETES_DIR, object.file)))];
    expect([...kustomization.resources].sort()).toEqual(files.filter((file) => file !== 'secret.example.yaml').sort());
    expect(kustomization.images.map((image) => image.name)).toContain(container.image);
  });

  it('the StatefulSet runs behind the headless Service, whose per-pod names outlive readiness', () => {
    expect(statefulSet.spec.serviceName).toBe(service.metadata.name);
    expect(service.spec.clusterIP).toBe('None');
    expect(service.spec.publishNotReadyAddresses).toBe(true);
  });

  it('the Service, the StatefulSet, the disruption budget and the network policy all select the same pods', () => {
    for (const selector of [
      service.spec.selector,
      statefulSet.spec.selector.matchLabels,
      pdb.spec.selector.matchLabels,
      networkPolicy.spec.podSelector.matchLabels,
    ]) {
      expect(selector).not.toEqual({});
      expect(podLabels).toMatchObject(selector);
    }
    expect(pdb.spec).toMatchObject({ maxUnavailable: 1 });
    expect(pdb.spec.minAvailable).toBeUndefined();
  });

  it("the Service's port, the network policy's port and HOST_PORT are the container's named port", () => {
    const wire = container.ports.find((port) => port.name === service.spec.ports[0]?.targetPort);
    expect(wire?.containerPort).toBe(service.spec.ports[0]?.port);
    expect(networkPolicy.spec.ingress.flatMap((rule) => rule.ports.map((port) => port.port))).toEqual([wire?.name]);
    expect(container.env.find((variable) => variable.name === 'HOST_PORT')?.value).toBe(String(wire?.containerPort));
  });

  it('each pod is a host named after itself, with the shared secret from the Secret the example shows', () => {
    expect(container.env.find((variable) => variable.name === 'HOST_ID')?.valueFrom?.fieldRef?.fieldPath).toBe('metadata.name');
    const secretRef = container.env.find((variable) => variable.name === 'HOST_SHARED_SECRET')?.valueFrom?.secretKeyRef;
    expect(secretRef?.name).toBe(secretExample.metadata.name);
    expect(Object.keys(secretExample.stringData)).toContain(secretRef?.key);
    // A forgotten example must never run a fleet on a published secret: the host refuses it.
    expect(new TextEncoder().encode(secretExample.stringData[secretRef!.key]).byteLength).toBeLessThan(MIN_SHARED_SECRET_BYTES);
    expect(container.envFrom?.map((source) => source.configMapRef?.name)).toEqual([configMap.metadata.name]);
  });

  it("the pod's environment (image, ConfigMap, env) is one the host's own configuration parser accepts", () => {
    const env: Record<string, string> = { ...imageEnv, ...configMap.data };
    for (const variable of container.env) {
      if (variable.value !== undefined) env[variable.name] = variable.value;
      else if (variable.valueFrom?.fieldRef) env[variable.name] = 'browser-host-0';
      else if (variable.valueFrom?.secretKeyRef) env[variable.name] = 'a-shared-secret-of-at-least-32-bytes-for-the-test';
    }
    const config = parseHostConfig(env, [], container.workingDir);
    expect(config).toMatchObject({
      bind: '0.0.0.0',
      port: 8790,
      hostId: 'browser-host-0',
      profilesDir: '/data/profiles',
      chromiumPath: '/usr/bin/chromium',
      headless: false,
    });
    expect(config.edgeUrl).toMatch(/^https?:\/\//);
  });

  it('the preStop hook runs the drain command of npm run host:drain with Node itself, and the grace period outlasts the longest hold a drain waits for', () => {
    expect(container.lifecycle?.preStop?.exec?.command).toEqual(['node', 'browser-host/drain/drain-command.ts']);
    expect(packageJson.scripts['host:drain']).toMatch(/ node browser-host\/drain\/drain-command\.ts$/);
    const longestHoldS = Math.max(CEREMONY_TIMEOUT_MS, DEFAULT_EDGE_CONFIG.leaseTtlMs) / 1000;
    expect(statefulSet.spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(longestHoldS + 60);
  });

  it('the drain script runs in the image: no devDependency, only files the image holds', () => {
    const script = packageJson.scripts['host:drain']!;
    const devBins = Object.keys(packageJson.devDependencies).flatMap((name) => {
      const bin = (JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')) as { bin?: string | Record<string, string> }).bin;
      return bin === undefined ? [] : typeof bin === 'string' ? [name.split('/').at(-1)!] : Object.keys(bin);
    });
    const words = script.split(/\s+/);
    expect(words.filter((word) => devBins.includes(word))).toEqual([]);
    expect(words.filter((word) => existsSync(join(root, word)) && word.includes('/') && !isCopied(word))).toEqual([]);
  });

  it("both probes run the host's hello probe, the same command as the image's HEALTHCHECK", () => {
    const healthcheck = healthcheckCommand();
    expect(healthcheck).toEqual(['node', 'browser-host/hello-probe.ts']);
    expect(container.readinessProbe?.exec?.command).toEqual(healthcheck);
    expect(container.livenessProbe?.exec?.command).toEqual(healthcheck);
    expect(existsSync(join(root, 'browser-host/hello-probe.ts'))).toBe(true);
  });

  it("the pod runs as the image's non-root user, and everything the host writes is on a volume of the pod", () => {
    const { securityContext } = statefulSet.spec.template.spec;
    expect(securityContext.runAsNonRoot).toBe(true);
    expect(`${securityContext.runAsUser}:${securityContext.runAsGroup}`).toBe(imageUser);
    expect(container.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
    const volumes = statefulSet.spec.template.spec.volumes.map((volume) => volume.name);
    expect(container.volumeMounts.filter((mount) => !volumes.includes(mount.name))).toEqual([]);
    const profilesDir = container.env.find((variable) => variable.name === 'HOST_PROFILES_DIR')?.value;
    for (const written of [profilesDir, imageEnv.HOME, '/tmp']) {
      expect(
        container.volumeMounts.some((mount) => written?.startsWith(mount.mountPath)),
        `${written} on a volume`,
      ).toBe(true);
    }
    expect(container.workingDir).toBe(argumentsOf(finalOf('WORKDIR').at(-1)!)[0]);
  });
});

describe('the host image (deploy/host/Dockerfile)', () => {
  it("builds on Debian bookworm with the project's Node 22 LTS in every stage", () => {
    const images = dockerfile.getFROMs().map((from) => argumentsOf(from)[0]);
    expect(images.length).toBeGreaterThan(0);
    for (const image of images) expect(image).toBe(`node:${NODE_VERSION}-bookworm-slim`);
    expect(NODE_VERSION).toMatch(/^22\./);
  });

  it("installs Debian's chromium and xvfb, tini and fonts, without recommends", () => {
    const installs = finalOf('RUN')
      .map((run) => argumentsOf(run))
      .filter((words) => words.includes('apt-get') && words.includes('install'));
    expect(installs).toHaveLength(1);
    const words = installs[0]!;
    for (const name of ['chromium', 'xvfb', 'tini', 'fonts-liberation', 'fonts-noto-cjk', 'fonts-noto-color-emoji']) expect(words).toContain(name);
    expect(words).toContain('--no-install-recommends');
    expect(imageEnv.CHROMIUM_PATH).toBe('/usr/bin/chromium');
  });

  it('ends as a numeric non-root user, after everything that needs root', () => {
    expect(imageUser).toMatch(/^[1-9]\d*:[1-9]\d*$/);
    const lastUser = finalStage.lastIndexOf(finalOf('USER').at(-1)!);
    expect(finalStage.slice(lastUser).filter((instruction) => ['RUN', 'COPY', 'ADD'].includes(instruction.getKeyword()))).toEqual([]);
  });

  it('runs the host entry with plain node under tini, stops on SIGTERM and exposes HOST_PORT', () => {
    expect(jsonOf(finalOf('ENTRYPOINT')[0])).toEqual(['/usr/bin/tini', '--']);
    const command = jsonOf(finalOf('CMD')[0]);
    expect(command).toEqual(['node', 'browser-host/main.ts']);
    expect(packageJson.scripts.host).toContain(command![1]);
    expect(argumentsOf(finalOf('STOPSIGNAL')[0]!)).toEqual(['SIGTERM']);
    expect(argumentsOf(finalOf('EXPOSE')[0]!)).toEqual([imageEnv.HOST_PORT]);
    expect(imageEnv).toMatchObject({ HOST_BIND: '0.0.0.0', NODE_ENV: 'production' });
  });

  it('installs production dependencies only, and everything the host imports is one of them', () => {
    const npm = dockerfile.getInstructions().find((instruction) => argumentsOf(instruction).join(' ').includes('npm ci'));
    expect(argumentsOf(npm!)).toEqual(expect.arrayContaining(['npm', 'ci', '--omit=dev']));
    const bare = [...importsUnder('browser-host'), ...importsUnder('shared')].filter(
      ({ specifier }) => !specifier.startsWith('.') && !specifier.startsWith('node:'),
    );
    const packageOf = (specifier: string) =>
      specifier
        .split('/')
        .slice(0, specifier.startsWith('@') ? 2 : 1)
        .join('/');
    expect(bare.filter(({ specifier }) => !(packageOf(specifier) in packageJson.dependencies))).toEqual([]);
  });

  it('holds every file the host imports, and .dockerignore lets in exactly what it copies', () => {
    const outside = [...importsUnder('browser-host'), ...importsUnder('shared')]
      .filter(({ specifier }) => specifier.startsWith('.'))
      .map(({ file, specifier }) => ({ file, target: relative(root, resolve(root, dirname(file), specifier)) }))
      .filter(({ target }) => !isCopied(target));
    expect(outside).toEqual([]);
    for (const path of copiedPaths) expect(existsSync(join(root, path)), path).toBe(true);
    const ignore = readFileSync(join(root, '.dockerignore'), 'utf8')
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== '' && !line.startsWith('#'));
    expect(ignore[0]).toBe('*');
    expect(
      ignore
        .slice(1)
        .map((line) => line.replace(/^!/, '').replace(/\/$/, ''))
        .sort(),
    ).toEqual([...new Set(copiedPaths)].sort());
  });
});
