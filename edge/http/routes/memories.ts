import { createRoute } from '@hono/zod-openapi';
import { IdParam } from '../../../shared/api.ts';
import {
  CreateMemoryBody,
  MAX_ACTIVE_MEMORIES,
  MAX_MEMORY_STATEMENT_CHARS,
  MemoryList,
  MemoryListQuery,
  MemoryView,
  SuggestionDecisionBody,
  SuggestionList,
  SuggestionListQuery,
  SuggestionView,
  UpdateMemoryBody,
} from '../../../shared/memories.ts';
import { createMemory, listMemories, loadMemory, updateMemory } from '../../memories/memories.ts';
import { decideSuggestion, listSuggestions } from '../../memories/suggestions.ts';
import { memoryView, suggestionView } from '../../memories/views.ts';
import { requirePrincipal } from '../require-principal.ts';
import { AUTH_ERRORS, errorResponses, jsonBody, jsonResponse, newRouter } from '../router.ts';

const security = [{ bearer: [] }];

const create = createRoute({
  method: 'post',
  path: '/v1/memories',
  summary: `Remember a statement in the owner's own words (owner only; at most ${MAX_MEMORY_STATEMENT_CHARS} characters, no control or invisible format characters; at most ${MAX_ACTIVE_MEMORIES} active memories)`,
  security,
  middleware: [requirePrincipal('owner')] as const,
  request: { body: jsonBody(CreateMemoryBody) },
  responses: { 201: jsonResponse(MemoryView, 'the new active memory'), ...errorResponses(...AUTH_ERRORS, 'quota_exceeded') },
});

const list = createRoute({
  method: 'get',
  path: '/v1/memories',
  summary: "The owner's memories, newest first: active and retired, or only the state named (owner only)",
  security,
  middleware: [requirePrincipal('owner')] as const,
  request: { query: MemoryListQuery },
  responses: { 200: jsonResponse(MemoryList, 'the memories'), ...errorResponses(...AUTH_ERRORS) },
});

const read = createRoute({
  method: 'get',
  path: '/v1/memories/{id}',
  summary: 'One of the owner\u2019s memories (owner only; another owner\u2019s is not found)',
  security,
  middleware: [requirePrincipal('owner')] as const,
  request: { params: IdParam },
  responses: { 200: jsonResponse(MemoryView, 'the memory'), ...errorResponses(...AUTH_ERRORS, 'not_found') },
});

const update = createRoute({
  method: 'patch',
  path: '/v1/memories/{id}',
  summary:
    'Edit a memory\u2019s statement (its revision + 1) or retire it (final: a retired memory is never brought to a run again, nor edited); with `revision`, only if it is still that revision (owner only)',
  security,
  middleware: [requirePrincipal('owner')] as const,
  request: { params: IdParam, body: jsonBody(UpdateMemoryBody) },
  responses: { 200: jsonResponse(MemoryView, 'the memory as changed'), ...errorResponses(...AUTH_ERRORS, 'not_found', 'stale_revision', 'already_decided') },
});

const listSuggested = createRoute({
  method: 'get',
  path: '/v1/memory-suggestions',
  summary:
    'Memories agents proposed in their run reports, newest first, each saying whether the agent read it on a page (owner only); none is a memory until the owner accepts it',
  security,
  middleware: [requirePrincipal('owner')] as const,
  request: { query: SuggestionListQuery },
  responses: { 200: jsonResponse(SuggestionList, 'the suggestions'), ...errorResponses(...AUTH_ERRORS) },
});

const decide = createRoute({
  method: 'post',
  path: '/v1/memory-suggestions/{id}/decision',
  summary:
    'Accept a pending suggestion as an active memory (optionally in the owner\u2019s own words) or reject it; a decision is final (owner only; acceptance counts against the active-memory cap)',
  security,
  middleware: [requirePrincipal('owner')] as const,
  request: { params: IdParam, body: jsonBody(SuggestionDecisionBody) },
  responses: {
    200: jsonResponse(SuggestionView, 'the decided suggestion; an accepted one names its memory'),
    ...errorResponses(...AUTH_ERRORS, 'not_found', 'already_decided', 'quota_exceeded'),
  },
});

/**
 * The owner's memories and agents' suggestions (issue 34, ADR-0168): owners only (agents and
 * operators are `forbidden`: an agent proposes memories only through its run report); another
 * owner's memory or suggestion is `not_found`.
 */
export const memoryRoutes = newRouter()
  .openapi(create, async (c) => c.json(memoryView(await createMemory(c.var.ports, c.var.principal, c.req.valid('json'))), 201))
  .openapi(list, async (c) => {
    const rows = await listMemories(c.var.ports, c.var.principal, c.req.valid('query').state);
    return c.json({ memories: rows.map(memoryView) }, 200);
  })
  .openapi(read, async (c) => c.json(memoryView(await loadMemory(c.var.ports, c.var.principal, c.req.valid('param').id)), 200))
  .openapi(update, async (c) => {
    const row = await updateMemory(c.var.ports, c.var.principal, c.req.valid('param').id, c.req.valid('json'));
    return c.json(memoryView(row), 200);
  })
  .openapi(listSuggested, async (c) => {
    const rows = await listSuggestions(c.var.ports, c.var.principal, c.req.valid('query').state);
    return c.json({ suggestions: rows.map(suggestionView) }, 200);
  })
  .openapi(decide, async (c) => {
    const decided = await decideSuggestion(c.var.ports, c.var.principal, c.req.valid('param').id, c.req.valid('json'));
    return c.json(suggestionView(decided.suggestion), 200);
  });
