// store/table.h — a column-oriented table (in memory), stored by Group::WriteTable as a
// group holding one 1-D dataset per column plus the attributes `columns` (the column order)
// and `rows`. h5py / pandas read it column by column (docs/HDF5.md "Tables").
//
//   Table t;
//   t.AddColumn("name", std::vector<std::string>{"a", "b"});
//   t.AddColumn("iso", std::vector<double>{0.1, 0.2});
//   group.WriteTable("sites", t);
//   Table r = group.ReadTable("sites");
//   const std::vector<double>& iso = r.Get<double>("iso");
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "store/types.h"

namespace pc::store {

class Table {
 public:
  using Column = std::variant<std::vector<double>, std::vector<float>, std::vector<int64_t>, std::vector<int32_t>,
                              std::vector<uint8_t>, std::vector<std::string>>;

  Table() = default;
  // `where` names the table in error messages ("results.h5:/runs/a/sites").
  explicit Table(std::string where) : where_(std::move(where)) {}

  // Appends a column. Errors: empty name or one with '/', a duplicate name, a length that
  // differs from the columns already added.
  template <typename T>
  Table& AddColumn(const std::string& name, std::vector<T> values) {
    static_assert(kIsElement<T>,
                  "store::Table: column type must be double, float, int64_t, int32_t, uint8_t or string");
    AddColumnVariant(name, Column(std::move(values)));
    return *this;
  }

  // Appends column `name` holding f(row) for every element of `rows`; f returns a column type.
  template <typename Rows, typename F>
  Table& AddColumnOf(const std::string& name, const Rows& rows, F f) {
    std::vector<std::decay_t<decltype(f(*std::begin(rows)))>> values;
    for (const auto& row : rows) values.push_back(f(row));
    return AddColumn(name, std::move(values));
  }

  int64_t rows() const { return rows_; }
  int64_t num_columns() const { return static_cast<int64_t>(names_.size()); }
  const std::vector<std::string>& column_names() const { return names_; }
  bool Has(const std::string& name) const;
  DType type(const std::string& name) const;  // throws for a missing column

  // Typed access: throws naming the column and both types on a mismatch, and the
  // columns present when `name` is missing.
  template <typename T>
  const std::vector<T>& Get(const std::string& name) const {
    static_assert(kIsElement<T>,
                  "store::Table: column type must be double, float, int64_t, int32_t, uint8_t or string");
    const Column& c = column(name);
    CheckType(name, c, DTypeOf<T>());
    return std::get<std::vector<T>>(c);
  }
  const Column& column(const std::string& name) const;

  // Used by the reader; adds a column of any supported type.
  void AddColumnVariant(const std::string& name, Column values);

 private:
  void CheckType(const std::string& name, const Column& c, DType wanted) const;
  std::string Where() const;

  std::string where_;
  std::vector<std::string> names_;
  std::vector<Column> columns_;
  int64_t rows_ = 0;
};

DType ColumnType(const Table::Column& column);
int64_t ColumnSize(const Table::Column& column);

}  // namespace pc::store
