import js from "@eslint/js";
import drizzle from "eslint-plugin-drizzle";
import reactHooks from "eslint-plugin-react-hooks";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: [".next/**", "node_modules/**", ".data/**", "test-results/**", "playwright-report/**", "next-env.d.ts", "db/migrations/**", "packages/*/dist/**"] },
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
  // Tool configs that must be CommonJS (.dependency-cruiser.cjs).
  { files: ["**/*.cjs"], languageOptions: { sourceType: "commonjs", globals: { module: "writable" } } },
);
