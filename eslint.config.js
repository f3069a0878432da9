import js from "@eslint/js";
import drizzle from "eslint-plugin-drizzle";
import reactHooks from "eslint-plugin-react-hooks";
import tseslint from "typescript-eslint";

export default tseslint.config(
  {
    ignores: [
      ".next/**",
      "node_modules/**",
      ".data/**",
      "test-results/**",
      "playwright-report/**",
      "next-env.d.ts",
      "db/migrations/**",
      "packages/*/dist/**",
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    plugins: { drizzle, "react-hooks": reactHooks },
    rules: {
      ...reactHooks.configs.recommended.rules,
      "drizzle/enforce-delete-with-where": ["error", { drizzleObjectName: ["db", "tx"] }],
      "drizzle/enforce-update-with-where": ["error", { drizzleObjectName: ["db", "tx"] }],
      "no-console": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
    },
  },
  {
    // The app holds a connection only through its pool's own ways (db/client.ts `Database`: reserve, begin,
    // transaction), which count what is held and set the transaction limits first.
    files: ["server/**/*.ts", "bench/**/*.ts"],
    rules: {
      "no-restricted-syntax": [
        "error",
        {
          selector:
            "CallExpression[callee.type='MemberExpression'][callee.property.name=/^(begin|transaction|reserve)$/]:not([callee.object.name='pool']):not([callee.object.property.name='pool']):not([callee.object.callee.name='pool'])",
          message: "Take a connection through the app's pool (ctx.pool.begin / transaction / reserve), not the driver's or Drizzle's own.",
        },
      ],
    },
  },
  // Tool configs that must be CommonJS (.dependency-cruiser.cjs).
  { files: ["**/*.cjs"], languageOptions: { sourceType: "commonjs", globals: { module: "writable" } } },
);
